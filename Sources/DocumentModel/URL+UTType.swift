import Foundation

/// The URL helpers UniformTypeIdentifiers adds to Foundation's URL: name a file after a type.
extension URL {
    /// `partialName` appended as a path component, with the type's preferred extension added unless
    /// the name already has an extension of that type.
    public func appendingPathComponent(_ partialName: String, conformingTo contentType: UTType) -> URL {
        appendingPathComponent(Self.name(partialName, conformingTo: contentType))
    }

    public mutating func appendPathComponent(_ partialName: String, conformingTo contentType: UTType) {
        self = appendingPathComponent(partialName, conformingTo: contentType)
    }

    /// The URL with the type's preferred extension added; unchanged when the type has none.
    public func appendingPathExtension(for contentType: UTType) -> URL {
        guard let fileExtension = contentType.preferredFilenameExtension else { return self }
        return appendingPathExtension(fileExtension)
    }

    public mutating func appendPathExtension(for contentType: UTType) {
        self = appendingPathExtension(for: contentType)
    }

    /// `appending(component:)` that names the component after the type, as `appendingPathComponent(_:conformingTo:)`.
    public func appending<S: StringProtocol>(component: S, conformingTo contentType: UTType) -> URL {
        appendingPathComponent(String(component), conformingTo: contentType)
    }

    public mutating func append<S: StringProtocol>(component: S, conformingTo contentType: UTType) {
        self = appending(component: component, conformingTo: contentType)
    }

    private static func name(_ partialName: String, conformingTo contentType: UTType) -> String {
        let existing = (partialName as NSString).pathExtension
        if !existing.isEmpty, let type = UTType(filenameExtension: existing), type.conforms(to: contentType) { return partialName }
        guard let fileExtension = contentType.preferredFilenameExtension else { return partialName }
        return partialName + "." + fileExtension
    }
}
