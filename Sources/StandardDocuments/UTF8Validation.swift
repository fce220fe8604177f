import SystemSupport

/// Bytes between releases of a mapped file's pages while validating it: validating a large file
/// costs this much resident memory, not the file's size.
let validationWindow = 8 << 20

/// The offset of the first byte that breaks well-formed UTF-8 (an overlong form, a surrogate, a code
/// point past U+10FFFF, a truncated sequence), or nil when all of `bytes` is valid. Checked in place,
/// in one pass: validating a mapped 1 GiB file must not build a 1 GiB String.
func firstInvalidUTF8(_ bytes: UnsafeRawBufferPointer) -> Int? {
    var index = 0
    let count = bytes.count
    var nextRelease = validationWindow
    while index < count {
        if index >= nextRelease {
            MappedRegions.releasePages(of: bytes, before: index)
            nextRelease += validationWindow
        }
        // Fast path: eight ASCII bytes at a time.
        while index + 8 <= count,
              bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
            index += 8
        }
        guard index < count else { return nil }
        if bytes[index] < 0x80 {
            index += 1
            continue
        }
        guard let length = utf8SequenceLength(bytes, at: index) else { return index }
        index += length
    }
    return nil
}

/// The length of the well-formed multi-byte UTF-8 sequence starting at `index`, or nil.
func utf8SequenceLength(_ bytes: UnsafeRawBufferPointer, at index: Int) -> Int? {
    UTF8Sequence.decode(bytes, at: index)?.length
}
