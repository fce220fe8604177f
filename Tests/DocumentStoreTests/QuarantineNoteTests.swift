import DocumentStore
import Foundation
import Testing

/// The `key: value` notes an earlier DocFS wrote beside a refused copy ("document: PATH\ntime:
/// TIME\nreason: REASON\n") are read by bytes and whole: `docfs quarantine restore` puts the copy
/// beside the document they name. The path's own spaces were trimmed (so ` a.md` was restored
/// beside `a.md`), and a path ending in "\r" made one Character of "\r\n", so the note was refused.
@Suite struct QuarantineNoteTests {
    @Test func anEarlierNoteNamesItsDocumentByEveryByte() throws {
        for document in [" a.md", "notes/a.md\u{3000}", "a\r", "b.md"] {
            let note = Quarantine.Note(parsing: Data("document: \(document)\ntime: 20261124T120000Z\nreason: it does not decode\n".utf8))
            #expect(note?.document == document, "\(document.debugDescription): \(String(describing: note))")
            #expect(note?.reason == "it does not decode")
        }
        #expect(Quarantine.Note(parsing: Data("document: a.md\ntime: T\n".utf8)) == nil, "a key missing")
        #expect(Quarantine.Note(parsing: Data("document: a.md\ndocument: b.md\ntime: T\nreason: r\n".utf8)) == nil, "a key twice")
    }
}
