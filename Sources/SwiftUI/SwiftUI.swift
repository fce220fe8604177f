// The document scope of SwiftUI on Linux: `FileDocument`, `ReferenceFileDocument`, their read, write
// and document configurations, `Binding`, `@ObservedObject`, and the Combine and
// UniformTypeIdentifiers names SwiftUI brings along, so a document type written for an Apple app
// compiles with `import SwiftUI` unchanged. Views, scenes and `DocumentGroup` are out of scope: on
// Linux a document is served by DocFS, not shown in a window.
@_exported import DocumentModel
@_exported import Combine
@_exported import UniformTypeIdentifiers
