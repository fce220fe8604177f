/// Coders that turn a whole value to or from one top-level representation, as Combine's
/// `decode(type:decoder:)` and `encode(encoder:)` operators use them. Declared here because packages
/// built beside this module (Yams, for one) conform their coders when `Combine` can be imported.
public protocol TopLevelDecoder {
    associatedtype Input
    func decode<T: Decodable>(_ type: T.Type, from: Input) throws -> T
}

public protocol TopLevelEncoder {
    associatedtype Output
    func encode<T: Encodable>(_ value: T) throws -> Output
}
