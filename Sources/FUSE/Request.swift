import CFUSE
import Glibc
import SystemSupport

/// One request from the kernel: the file system it is for, who sent it, and the replies.
/// Every path through a callback must send exactly one reply.
struct Request {
    let raw: fuse_req_t
    let operations: any FileSystemOperations

    init(_ raw: fuse_req_t) {
        self.raw = raw
        // The userdata is the OperationsBox the session retained for its whole life.
        operations = OperationsBox.from(fuse_req_userdata(raw)).operations
        // Work done for this request (a validator it runs) runs with its sender's rights.
        let sender = fuse_req_ctx(raw)
        Requester.set(sender.map { Ownership(userID: $0.pointee.uid, groupID: $0.pointee.gid) })
    }

    var caller: RequestContext {
        guard let context = fuse_req_ctx(raw) else { return RequestContext(userID: 0, groupID: 0, processID: 0, umask: 0o022) }
        return RequestContext(userID: context.pointee.uid, groupID: context.pointee.gid, processID: context.pointee.pid, umask: context.pointee.umask)
    }

    func replyError(_ error: FUSEError) {
        fuse_reply_err(raw, error.errno)
    }

    func replyStatus(_ body: () throws(FUSEError) -> Void) {
        do throws(FUSEError) {
            try body()
            fuse_reply_err(raw, 0)
        } catch {
            replyError(error)
        }
    }

    func replyEntry(_ body: () throws(FUSEError) -> Entry) {
        do throws(FUSEError) {
            var parameters = try body().parameters
            if fuse_reply_entry(raw, &parameters) == -ENOENT, parameters.ino != 0 {
                // The caller went away: the kernel will never forget what it never got.
                operations.forget(inode: parameters.ino, count: 1)
            }
        } catch {
            replyError(error)
        }
    }

    func replyAttributes(_ body: () throws(FUSEError) -> AttributesReply) {
        do throws(FUSEError) {
            var reply = try body()
            fuse_reply_attr(raw, &reply.attributes, reply.timeout)
        } catch {
            replyError(error)
        }
    }

    /// getxattr/listxattr: with size 0 the caller asks only how large the value is.
    func replySized(_ requested: Int, _ body: () throws(FUSEError) -> [UInt8]) {
        do throws(FUSEError) {
            let value = try body()
            if requested == 0 {
                fuse_reply_xattr(raw, value.count)
            } else if value.count > requested {
                replyError(.range)
            } else {
                value.withUnsafeBufferPointer { buffer in
                    _ = fuse_reply_buf(raw, buffer.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, buffer.count)
                }
            }
        } catch {
            replyError(error)
        }
    }

    func replyDirectory(inode: Inode, handle: UInt64, size: Int, offset: Int64, plus: Bool) {
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(size, 1))
        defer { buffer.deallocate() }
        var used = 0
        do throws(FUSEError) {
            try operations.readDirectory(inode: inode, handle: handle, offset: offset, plus: plus) { item in
                let remaining = size - used
                let needed: Int
                if plus {
                    var parameters = item.entry?.parameters ?? fuse_entry_param()
                    if item.entry == nil {
                        parameters.attr.st_ino = ino_t(item.number)
                        parameters.attr.st_mode = item.mode
                    }
                    needed = FileSystemPath.withCString(item.name) { fuse_add_direntry_plus(raw, buffer + used, remaining, $0, &parameters, off_t(item.nextOffset)) }
                } else {
                    var attributes = stat()
                    attributes.st_ino = ino_t(item.number)
                    attributes.st_mode = item.mode
                    needed = FileSystemPath.withCString(item.name) { fuse_add_direntry(raw, buffer + used, remaining, $0, &attributes, off_t(item.nextOffset)) }
                }
                guard needed <= remaining else { return false }
                used += needed
                return true
            }
            fuse_reply_buf(raw, buffer, used)
        } catch {
            replyError(error)
        }
    }
}

extension Entry {
    var parameters: fuse_entry_param {
        var parameters = fuse_entry_param()
        parameters.ino = inode
        parameters.generation = generation
        parameters.attr = attributes
        parameters.attr_timeout = attributeTimeout
        parameters.entry_timeout = entryTimeout
        return parameters
    }
}

extension OpenReply {
    func apply(to info: UnsafeMutablePointer<fuse_file_info>) {
        docfs_fi_set_open_reply(info, handle, keepCache ? 1 : 0, directIO ? 1 : 0, cacheDirectory ? 1 : 0, 0)
    }
}

extension AttributeChanges {
    init(_ attributes: stat, toSet: Int32) {
        self.init()
        if toSet & FUSE_SET_ATTR_MODE != 0 { mode = attributes.st_mode }
        if toSet & FUSE_SET_ATTR_UID != 0 { userID = attributes.st_uid }
        if toSet & FUSE_SET_ATTR_GID != 0 { groupID = attributes.st_gid }
        if toSet & FUSE_SET_ATTR_SIZE != 0 { size = Int64(attributes.st_size) }
        if toSet & FUSE_SET_ATTR_ATIME_NOW != 0 { accessTime = .now } else if toSet & FUSE_SET_ATTR_ATIME != 0 { accessTime = .time(attributes.st_atim) }
        if toSet & FUSE_SET_ATTR_MTIME_NOW != 0 { modificationTime = .now } else if toSet & FUSE_SET_ATTR_MTIME != 0 { modificationTime = .time(attributes.st_mtim) }
    }
}
