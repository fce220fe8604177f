import CCrypto

/// Splits content into chunks at places its bytes choose (a gear rolling hash), so an insertion
/// early in a document moves only the chunk it falls in: the other chunks of the new version hash
/// as before and are not sent again. Chunks are 16 KiB to 256 KiB, 64 KiB on average.
enum ContentChunks {
    static let minimum = 16 * 1024
    static let maximum = 256 * 1024
    /// A cut where the hash's top 16 bits are zero: one place in 64 KiB on average.
    private static let mask: UInt64 = 0xFFFF_0000_0000_0000
    static let hashLength = 32

    /// 256 pseudo-random words (splitmix64 from a fixed seed), the same on every machine.
    private static let gear: [UInt64] = {
        var state: UInt64 = 0x646F_6366_7367_6561
        return (0..<256).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }()

    /// The chunks' ranges, in order; empty content has none.
    static func boundaries(of bytes: UnsafeRawBufferPointer) -> [Range<Int>] {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return [] }
        // Pointers, not collections: this loop sees every byte of every save.
        return gear.withUnsafeBufferPointer { gear in
            guard let gear = gear.baseAddress else { return [] }
            var ranges: [Range<Int>] = []
            var start = 0
            let count = bytes.count
            while start < count {
                let end = min(start + maximum, count)
                var cut = end
                if end - start > minimum {
                    var hash: UInt64 = 0
                    var index = start + minimum
                    while index < end {
                        hash = (hash &<< 1) &+ gear[Int(base[index])]
                        if hash & mask == 0 {
                            cut = index + 1
                            break
                        }
                        index &+= 1
                    }
                }
                ranges.append(start..<cut)
                start = cut
            }
            return ranges
        }
    }

    /// The chunk a run of zeros is cut into, when every such chunk is the longest: the gear hash
    /// over zeros after k bytes is gear[0] × (2^k − 1), constant from the 64th byte on, so if none
    /// of the first 64 cuts, none does. Then a hole (which reads as zeros) of `maximum` bytes from a
    /// chunk's start is this chunk, and neither upload nor download needs to touch its bytes: a
    /// 10 GB sparse file holding a few bytes is not read, hashed or written out whole (xfstests
    /// generic/130). Nil would mean zeros are cut like other bytes, with no shortcut.
    static let zeroChunk: (hash: [UInt8], size: Int)? = {
        var factor: UInt64 = 0
        for _ in 1...64 {
            factor = factor &<< 1 | 1
            if (gear[0] &* factor) & mask == 0 { return nil }
        }
        let zeros = [UInt8](repeating: 0, count: maximum)
        return (zeros.withUnsafeBytes { sha256($0) }, maximum)
    }()

    static func sha256(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: hashLength)
        _ = docfs_sha256(bytes.baseAddress, bytes.count, &digest)
        return digest
    }
}
