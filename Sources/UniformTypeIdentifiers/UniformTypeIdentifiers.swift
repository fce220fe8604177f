// UniformTypeIdentifiers on Linux: `UTType` (Apple's system types, the app's declarations from its
// Info.plist or `UTType.register`, the freedesktop MIME database), `UTTagClass`, and the URL
// helpers. They live in DocumentModel, which this module re-exports.
@_exported import DocumentModel
