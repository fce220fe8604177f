// A document type written for an Apple app imports SwiftUI and UniformTypeIdentifiers, which bring
// Foundation's names (Data, URL, CocoaError) and Combine's (ObservableObject, @Published) along;
// `import DocumentModel` does the same here.
@_exported import Foundation
@_exported import Combine
