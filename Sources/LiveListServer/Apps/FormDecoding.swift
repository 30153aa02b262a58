import Foundation

/// What is wrong with a form, field by field: the messages a page shows next to each field when it
/// answers the form again (422 with the form, not a generic page). ``AppRequest/decodeForm(_:)`` makes
/// one from what does not decode; an app adds its own checks (`errors["title"] = "Say what is wrong"`)
/// and throws or returns it.
public struct FormErrors: Error, Sendable, Equatable {
    /// The message of each field that is wrong, by the field's name.
    public var fields: [String: String]

    /// No errors, or the given ones.
    public init(_ fields: [String: String] = [:]) {
        self.fields = fields
    }

    /// The message of `field`, nil when it is right.
    public subscript(field: String) -> String? {
        get { fields[field] }
        set { fields[field] = newValue }
    }

    /// Whether no field is wrong.
    public var isEmpty: Bool { fields.isEmpty }
}

extension AppRequest {
    /// The form body decoded as `type`, or what is wrong with it field by field.
    ///
    ///     struct NewTicket: Decodable { var title: String; var priority: Priority }
    ///     switch request.decodeForm(NewTicket.self) {
    ///     case let .success(ticket): …
    ///     case let .failure(errors): return request.page(title: "New ticket", status: .unprocessableContent) { form(errors) }
    ///     }
    ///
    /// A field decodes as `String` (as sent), `Int`, `Double` or `Bool` (a checkbox: present and not
    /// `false`/`off` is true, absent is false), an enum with `String` raw values (one of them, exactly),
    /// or an optional of these (absent or empty is nil). A required field that is absent or empty (after
    /// trimming blanks) is "Required."; a value of the wrong kind says which kind it needs. Values are
    /// as the browser sent them (not trimmed); the body's size is bounded by the route's limit.
    public func decodeForm<T: Decodable>(_ type: T.Type) -> Result<T, FormErrors> {
        FormDecoding.decode(type, from: form)
    }
}

/// Decodes a flat form (`name=value` fields) into a `Decodable` type, collecting one message per field.
enum FormDecoding {
    static func decode<T: Decodable>(_ type: T.Type, from fields: [String: String]) -> Result<T, FormErrors> {
        let decoder = FieldsDecoder(fields: fields)
        do {
            let value = try T(from: decoder)
            return decoder.errors.isEmpty ? .success(value) : .failure(decoder.errors.value)
        } catch {
            var errors = decoder.errors.value
            if errors.isEmpty {
                // A shape the form cannot have (a nested type): said once, on no field.
                errors[""] = "This form cannot be read: \(error)"
            }
            return .failure(errors)
        }
    }
}

/// The errors met while decoding, shared by the decoder's containers (a class: containers are values).
private final class ErrorBox {
    var value = FormErrors()
    var isEmpty: Bool { value.isEmpty }
}

private struct FieldsDecoder: Decoder {
    let fields: [String: String]
    let errorBox = ErrorBox()
    var errors: ErrorBox { errorBox }
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(FieldsContainer<Key>(fields: fields, errors: errorBox))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch([Any].self, .init(codingPath: [], debugDescription: "a form is named fields, not a list"))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw DecodingError.typeMismatch(Any.self, .init(codingPath: [], debugDescription: "a form is named fields, not one value"))
    }
}

/// The fields by name. A field that does not decode records its message and decodes as a placeholder
/// (so every field's error is found in one pass); the result is then thrown away.
private struct FieldsContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let fields: [String: String]
    let errors: ErrorBox
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { fields.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { fields[key.stringValue] != nil }

    /// Absent or blank: what an optional decodes as nil.
    func decodeNil(forKey key: Key) throws -> Bool {
        guard let value = fields[key.stringValue] else { return true }
        return value.allSatisfy(\.isWhitespace)
    }

    private func text(_ key: Key) -> String? {
        guard let value = fields[key.stringValue], !value.allSatisfy(\.isWhitespace) else {
            errors.value[key.stringValue] = errors.value[key.stringValue] ?? "Required."
            return nil
        }
        return value
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        guard let value = fields[key.stringValue] else { return false }
        return !["false", "off", "0", "no"].contains(value.lowercased())
    }

    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        text(key) ?? ""
    }

    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        guard let value = text(key) else { return 0 }
        guard let number = Double(value.trimmingCharacters(in: .whitespaces)), number.isFinite else {
            errors.value[key.stringValue] = "Enter a number."
            return 0
        }
        return number
    }

    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        Float(try decode(Double.self, forKey: key))
    }

    func decode<T: BinaryInteger & Decodable>(integer type: T.Type, forKey key: Key) -> T {
        guard let value = text(key) else { return 0 }
        guard let number = Int(value.trimmingCharacters(in: .whitespaces)), let exact = T(exactly: number) else {
            errors.value[key.stringValue] = "Enter a whole number."
            return 0
        }
        return exact
    }

    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { decode(integer: type, forKey: key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { decode(integer: type, forKey: key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { decode(integer: type, forKey: key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { decode(integer: type, forKey: key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { decode(integer: type, forKey: key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { decode(integer: type, forKey: key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { decode(integer: type, forKey: key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { decode(integer: type, forKey: key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { decode(integer: type, forKey: key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { decode(integer: type, forKey: key) }

    /// Any other type: an enum with `String` raw values decodes through one value, the field's.
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let value = fields[key.stringValue]
        do {
            return try T(from: FieldValueDecoder(value: value ?? ""))
        } catch {
            if value == nil || value?.allSatisfy(\.isWhitespace) == true {
                errors.value[key.stringValue] = "Required."
            } else {
                errors.value[key.stringValue] = "Choose one of the values offered."
            }
            throw FieldFailed()
        }
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        throw DecodingError.typeMismatch(type, .init(codingPath: [key], debugDescription: "a form field holds one value"))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch([Any].self, .init(codingPath: [key], debugDescription: "a form field holds one value"))
    }

    func superDecoder() throws -> any Decoder { FieldsDecoder(fields: fields) }
    func superDecoder(forKey key: Key) throws -> any Decoder { FieldsDecoder(fields: fields) }
}

/// A field whose value did not decode: its message is recorded already.
private struct FieldFailed: Error {}

/// One field's value, for a type that decodes from a single value (an enum of strings).
private struct FieldValueDecoder: Decoder, SingleValueDecodingContainer {
    let value: String
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        throw DecodingError.typeMismatch(type, .init(codingPath: [], debugDescription: "a form field holds one value"))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch([Any].self, .init(codingPath: [], debugDescription: "a form field holds one value"))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }
    func decodeNil() -> Bool { value.isEmpty }
    func decode(_ type: String.Type) throws -> String { value }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        throw DecodingError.typeMismatch(type, .init(codingPath: [], debugDescription: "a form field is text"))
    }
}
