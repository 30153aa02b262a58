import Foundation
import LiveListHTML

/// The source of an app list whose state the store keeps (`ListRegistry.hostApp(_:state:render:)`): the
/// state, type-erased, its stored encoding, and how it renders.
struct StateSource {
    private(set) var value: any Sendable
    private(set) var bytes: [UInt8]
    private let render: @Sendable (any Sendable) -> [Section]
    private let decode: @Sendable ([UInt8]) throws -> any Sendable

    init<State: Codable & Equatable & Sendable>(state: State, render: @escaping @Sendable (State) -> [Section]) throws {
        value = state
        bytes = try Self.encode(state)
        self.render = { value in
            guard let state = value as? State else { return [] }
            return render(state)
        }
        decode = { bytes in try JSONDecoder().decode(State.self, from: Data(bytes)) }
    }

    /// The source with the state that `bytes` encode (stored by another process of a shared store).
    ///
    /// - Throws: when `bytes` do not decode as the state's type.
    func replaced(by bytes: [UInt8]) throws -> StateSource {
        var source = self
        source.value = try decode(bytes)
        source.bytes = bytes
        return source
    }

    /// What the state renders.
    var sections: [Section] { render(value) }

    /// The source after `change` ran on the state, or nil when the state did not change.
    ///
    /// - Throws: what `change` throws, or `ListWriteError` when the source keeps another type or the new
    ///   state does not encode.
    func changed<State: Codable & Equatable & Sendable>(
        _ type: State.Type, by change: (inout State) throws -> Void, list name: ListName
    ) throws -> StateSource? {
        guard let state = value as? State else {
            throw ListWriteError(.internal, code: "internal", detail: "\(name) does not keep a state of type \(State.self)")
        }
        var next = state
        try change(&next)
        let bytes: [UInt8]
        do {
            bytes = try Self.encode(next)
        } catch {
            throw ListWriteError(.internal, code: "internal", detail: "the state of \(name) does not encode: \(error)")
        }
        // Unchanged only when equal and stored alike: Swift's `==` takes canonically equivalent
        // texts for one, the page and the store do not.
        guard next != state || bytes != self.bytes else { return nil }
        var source = self
        source.value = next
        source.bytes = bytes
        return source
    }

    private static func encode<State: Encodable>(_ state: State) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Array(try encoder.encode(state))
    }
}
