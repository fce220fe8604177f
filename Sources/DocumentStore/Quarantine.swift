import Foundation
import Glibc
import SystemSupport

/// How much refused and interrupted content the quarantine keeps. Pruned oldest first, never the
/// item just added.
public struct QuarantineLimits: Sendable {
    /// Bytes kept in all, counted over the items' contents.
    public var maximumBytes: Int64
    /// Seconds an item is kept.
    public var maximumAge: TimeInterval

    public init(maximumBytes: Int64 = 1 << 30, maximumAge: TimeInterval = 30 * 24 * 3600) {
        self.maximumBytes = maximumBytes
        self.maximumAge = maximumAge
    }
}

/// The quarantine folder's items: each a file or folder named `TIME-TAG-PID-N-DOCUMENT`, with a
/// `.reason` file beside it.
public enum Quarantine {
    /// The quarantine folder's name in the private area.
    public static let folderName = FileName(validating: "quarantine")
    /// Its path from the store's root, which is also its path in a mount (see the mount's
    /// quarantine view).
    public static let relativePath = DirectoryStore.privateName.string + "/" + folderName.string

    public struct Item: Sendable {
        public var path: String
        public var date: Date
        public var bytes: Int64

        /// The item's name in the quarantine.
        public var name: String { StorePath.lastComponent(path) }

        /// The `.reason` note beside the item; nil when there is none or it does not parse.
        public var note: Note? {
            guard let descriptor = try? FileIO.open(path + ".reason", O_RDONLY) else { return nil }
            defer { FileIO.close(descriptor) }
            guard let data = try? FileIO.contents(of: descriptor, size: Note.largest + 1, mapping: false), data.count <= Note.largest else { return nil }
            return Note(parsing: data)
        }
    }

    /// What a quarantined item is: which document it was for, when and why it was kept. Written
    /// as JSON, so a name holding a newline or a `key:` stays inside its field.
    public struct Note: Codable, Sendable, Equatable {
        /// The store path of the document (names in `FileSystemPath`'s encoding).
        public var document: String
        /// When it was kept, UTC (`20261124T101500.123Z`).
        public var time: String
        public var reason: String

        public init(document: String, time: String, reason: String) {
            self.document = document
            self.time = time
            self.reason = reason
        }

        /// A note is small; anything larger is not one of ours.
        static let largest = 1 << 20

        public var data: Data {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return (try? encoder.encode(self)) ?? Data()
        }

        /// A note in JSON, or one in the `key: value` lines DocFS wrote before (each of the three
        /// keys exactly once, nothing else). Anything else is refused, never guessed at.
        public init?(parsing data: Data) {
            if let note = try? JSONDecoder().decode(Note.self, from: data) {
                self = note
                return
            }
            guard String(data: data, encoding: .utf8) != nil else { return nil }
            // By bytes: lines end at each newline byte (a document named `a\r` made one Character
            // of "\r\n"), and a value is what follows "key: " as that writer wrote it, whole: a
            // path's own leading or trailing spaces were trimmed, and the copy restored elsewhere.
            var fields: [String: String] = [:]
            for line in Array(data).split(separator: UInt8(ascii: "\n")) {
                guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
                let key = String(decoding: line[..<colon], as: UTF8.self)
                guard ["document", "time", "reason"].contains(key), fields[key] == nil else { return nil }
                var value = line[(colon + 1)...]
                if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
                fields[key] = String(decoding: value, as: UTF8.self)
            }
            guard let document = fields["document"], let time = fields["time"], let reason = fields["reason"] else { return nil }
            self.init(document: document, time: time, reason: reason)
        }
    }

    /// The items, oldest first. The time is read from the name (it sorts by time), else the file's.
    public static func items(in directory: String) -> [Item] {
        // By bytes: a name ending in a prepending character makes `.reason` no suffix by characters.
        let names = ((try? FileIO.directoryEntries(directory)) ?? []).filter { !$0.utf8.suffix(7).elementsEqual(".reason".utf8) }.sorted()
        return names.compactMap { name in
            let path = directory + "/" + name
            guard let status = try? FileStatus.of(path: path) else { return nil }
            let date = timestamp(in: name) ?? status.modificationDate
            return Item(path: path, date: date, bytes: size(of: path, status: status))
        }
    }

    private static func size(of path: String, status: FileStatus) -> Int64 {
        guard status.kind == .directory else { return status.blocks * 512 }
        return ((try? FileIO.directoryEntries(path)) ?? []).reduce(status.blocks * 512) { total, name in
            let child = path + "/" + name
            return total + ((try? FileStatus.of(path: child)).map { size(of: child, status: $0) } ?? 0)
        }
    }

    /// "20261122T140600.123Z-…" → that instant.
    private static func timestamp(in name: String) -> Date? {
        let bytes = Array(name.utf8.prefix(15))
        guard bytes.count == 15, bytes[8] == UInt8(ascii: "T") else { return nil }
        func number(_ range: Range<Int>) -> Int32? {
            var value: Int32 = 0
            for byte in bytes[range] {
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int32(byte - 48)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(4..<6), let day = number(6..<8),
              let hour = number(9..<11), let minute = number(11..<13), let second = number(13..<15)
        else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }
}

/// Store paths as parts of private file names: `%` and `/` escaped, cut to fit a name's 255 bytes.
enum StagingName {
    static let limit = 150

    /// `path` with `%` and `/` escaped, cut to `limit` bytes at a character's boundary. By
    /// Unicode scalars, never by `Character`: a name beginning with a combining mark makes one
    /// `Character` of the `/` before it, which then went into the staging name as a folder.
    static func encode(_ path: String) -> String {
        var result = String.UnicodeScalarView()
        var bytes = 0
        for scalar in path.unicodeScalars {
            let piece: String.UnicodeScalarView = scalar == "%" ? "%25".unicodeScalars : scalar == "/" ? "%2F".unicodeScalars : String(scalar).unicodeScalars
            let length = piece.reduce(0) { $0 + UTF8.width($1) }
            if bytes + length > limit { break }
            result.append(contentsOf: piece)
            bytes += length
        }
        return String(result)
    }

    /// The document a staging file was made for, from its name `stage-PID-N-DOCUMENT`.
    static func document(fromStagingName name: String) -> String? {
        let parts = name.utf8.split(separator: UInt8(ascii: "-"), maxSplits: 3, omittingEmptySubsequences: false).map { Substring($0) }
        guard parts.count == 4, parts[0] == "stage", !parts[3].isEmpty else { return nil }
        var result = String.UnicodeScalarView()
        var scalars = Substring(parts[3]).unicodeScalars[...]
        while let scalar = scalars.popFirst() {
            if scalar == "%", scalars.starts(with: "2F".unicodeScalars) {
                result.append("/")
                scalars = scalars.dropFirst(2)
            } else if scalar == "%", scalars.starts(with: "25".unicodeScalars) {
                result.append("%")
                scalars = scalars.dropFirst(2)
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }
}
