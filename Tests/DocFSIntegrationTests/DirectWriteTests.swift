import Foundation
import Testing

/// Direct I/O through the mount, as xfstests drives it (issue 38).
@Suite(.timeLimit(.minutes(10)))
struct DirectWriteTests {
    /// xfstests generic/451: a raw file rewritten whole by asynchronous direct writes (io_submit
    /// of an O_DIRECT descriptor) while other processes read it. Each reopen after a write must
    /// read what it wrote. The kernel does not drop, after an asynchronous direct write, the pages
    /// a concurrent read cached while it ran, and DocFS let the next open keep the page cache: it
    /// read the old bytes for the first pages and the new ones after them (fails on 4dcf07e, and on
    /// 418db0a when a reader opens read-write, as xfs_io does).
    @Test func aReadAfterAnAsynchronousDirectWriteSeesItWhileOthersRead() throws {
        let mount = try MountedStore(files: [:])
        defer { mount.unmount() }
        let result = try mount.run(["python3", "-c", Self.cycleWrites, mount.inMount("cycled.bin"), "400"], timeout: 300)
        #expect(result.succeeded && result.output == "every read saw its write\n", "\(result.output)\(result.error)")
    }

    /// Rewrites a 640 KiB file with two patterns in turn, each with one io_submit (the Linux AIO
    /// system calls, through ctypes) on an O_DIRECT descriptor, and reads it back after each,
    /// while two threads open and read it in a loop, one of them opening it read-write.
    private static let cycleWrites = """
        import ctypes, mmap, os, platform, struct, sys, threading
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        # The AIO system calls' numbers: x86_64's, else the generic table's (arm64, riscv64).
        IO_SETUP, IO_GETEVENTS, IO_SUBMIT = (206, 208, 209) if platform.machine() == "x86_64" else (0, 4, 2)
        IOCB_CMD_PWRITE = 1
        path, rounds, size = sys.argv[1], int(sys.argv[2]), 655360
        patterns = [b"\\x55" * size, b"\\xaa" * size]
        buffers = [mmap.mmap(-1, size) for _ in patterns]
        for buffer, pattern in zip(buffers, patterns): buffer.write(pattern)
        addresses = [ctypes.addressof(ctypes.c_char.from_buffer(buffer)) for buffer in buffers]
        context = ctypes.c_ulong(0)
        if libc.syscall(IO_SETUP, 8, ctypes.byref(context)) != 0: sys.exit("io_setup: errno %d" % ctypes.get_errno())
        def direct_write(descriptor, address):
            iocb = ctypes.create_string_buffer(struct.pack("<QIIHhIQQqQII", 0, 0, 0, IOCB_CMD_PWRITE, 0, descriptor, address, size, 0, 0, 0, 0))
            if libc.syscall(IO_SUBMIT, context, 1, (ctypes.c_void_p * 1)(ctypes.addressof(iocb))) != 1: sys.exit("io_submit: errno %d" % ctypes.get_errno())
            event = ctypes.create_string_buffer(32)
            if libc.syscall(IO_GETEVENTS, context, 1, 1, event, None) != 1: sys.exit("io_getevents: errno %d" % ctypes.get_errno())
            if struct.unpack("<QQqq", event.raw)[2] != size: sys.exit("a short direct write")
        with open(path, "wb") as f: f.write(patterns[0])
        done = threading.Event()
        def read_in_a_loop(mode):
            while not done.is_set():
                with open(path, mode) as f: f.read()
        # xfs_io opens read-write even to read: a writable handle's close must not vouch for the cache.
        readers = [threading.Thread(target=read_in_a_loop, args=(mode,)) for mode in ("rb", "r+b")]
        for reader in readers: reader.start()
        stale = None
        for round in range(1, rounds + 1):
            descriptor = os.open(path, os.O_RDWR | os.O_DIRECT)
            direct_write(descriptor, addresses[round % 2])
            os.close(descriptor)
            with open(path, "rb") as f: read = f.read()
            if read != patterns[round % 2]:
                stale = (round, len(read) - len(read.lstrip(patterns[(round + 1) % 2][:1])))
                break
        done.set()
        for reader in readers: reader.join()
        print("every read saw its write" if stale is None else "round %d read %d bytes of the earlier write first" % stale)
        """
}
