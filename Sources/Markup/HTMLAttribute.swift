/// An attribute of an element: a name and a value (escaped when rendered), or a name alone.
///
///     div(.class("card"), .data("state", "open"), .hidden) { … }
public struct HTMLAttribute: Sendable, Hashable {
    /// The attribute's name, restricted to characters that cannot break out of the tag.
    public let name: String
    /// The unescaped value, or nil for a boolean attribute written as its name alone.
    public let value: String?

    /// Creates an attribute. A name is kept to ASCII letters, digits and `-_:.`; any other character
    /// (space, quotes, `=`, `>`, `/`, controls) is replaced by `-`, so no name can end the tag or start
    /// another attribute. An empty name becomes `data-invalid`.
    public init(name: String, value: String?) {
        self.name = Self.sanitize(name: name)
        self.value = value
    }

    /// Writes the attribute, with a leading space.
    @inlinable
    public func render(into writer: inout HTMLWriter) {
        writer.appendAttribute(name: name, value: value)
    }

    static func sanitize(name: String) -> String {
        if name.isEmpty {
            return "data-invalid"
        }
        var isClean = true
        for byte in name.utf8 where !isNameByte(byte) {
            isClean = false
            break
        }
        if isClean {
            return name
        }
        return String(decoding: name.utf8.map { isNameByte($0) ? $0 : 0x2D }, as: UTF8.self)
    }

    static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30 ... 0x39, 0x41 ... 0x5A, 0x61 ... 0x7A, 0x2D, 0x5F, 0x3A, 0x2E: true
        default: false
        }
    }
}

extension HTMLAttribute {
    /// Any attribute by name (see ``init(name:value:)`` for how the name is kept safe).
    public static func custom(_ name: String, _ value: String?) -> HTMLAttribute {
        HTMLAttribute(name: name, value: value)
    }

    /// `data-NAME="value"`.
    public static func data(_ name: String, _ value: String) -> HTMLAttribute {
        HTMLAttribute(name: "data-" + name, value: value)
    }

    /// `aria-NAME="value"`.
    public static func aria(_ name: String, _ value: String) -> HTMLAttribute {
        HTMLAttribute(name: "aria-" + name, value: value)
    }

    /// `class="value"`, the value escaped.
    public static func `class`(_ value: String) -> HTMLAttribute { HTMLAttribute(name: "class", value: value) }
    /// `id="value"`, the value escaped.
    public static func id(_ value: String) -> HTMLAttribute { HTMLAttribute(name: "id", value: value) }
    /// `title="value"`, the value escaped.
    public static func title(_ value: String) -> HTMLAttribute { HTMLAttribute(name: "title", value: value) }
    /// `lang="value"`, the value escaped.
    public static func lang(_ value: String) -> HTMLAttribute { HTMLAttribute(name: "lang", value: value) }
    /// `role="value"`, the value escaped.
    public static func role(_ value: String) -> HTMLAttribute { HTMLAttribute(name: "role", value: value) }
    /// `style="value"`, the value escaped.
    public static func style(_ value: String) -> HTMLAttribute { HTMLAttribute(name: "style", value: value) }
    /// `type="value"`, the value escaped.
    public static func type(_ value: String) -> HTMLAttribute { HTMLAttribute(name: "type", value: value) }
    /// `name="value"`, the value escaped.
    public static func name(_ value: String) -> HTMLAttribute { HTMLAttribute(name: "name", value: value) }
    /// `value="value"`, the value escaped.
    public static func value(_ value: String) -> HTMLAttribute { HTMLAttribute(name: "value", value: value) }
    /// `placeholder="value"`, the value escaped.
    public static func placeholder(_ value: String) -> HTMLAttribute { HTMLAttribute(name: "placeholder", value: value) }
    /// `for="value"`, the value escaped.
    public static func `for`(_ value: String) -> HTMLAttribute { HTMLAttribute(name: "for", value: value) }
    /// `method="value"`, the value escaped.
    public static func method(_ value: String) -> HTMLAttribute { HTMLAttribute(name: "method", value: value) }
    /// `alt="value"`, the value escaped.
    public static func alt(_ value: String) -> HTMLAttribute { HTMLAttribute(name: "alt", value: value) }
    /// `rel="value"`, the value escaped.
    public static func rel(_ value: String) -> HTMLAttribute { HTMLAttribute(name: "rel", value: value) }
    /// `tabindex="value"`, the value escaped.
    public static func tabindex(_ value: Int) -> HTMLAttribute { HTMLAttribute(name: "tabindex", value: String(value)) }
    /// `datetime="value"`, the value escaped.
    public static func datetime(_ value: String) -> HTMLAttribute { HTMLAttribute(name: "datetime", value: value) }
    /// `autocomplete="value"`, the value escaped.
    public static func autocomplete(_ value: String) -> HTMLAttribute { HTMLAttribute(name: "autocomplete", value: value) }

    /// `href`, refusing script URLs (see ``safeURL(_:)``).
    public static func href(_ url: String) -> HTMLAttribute { HTMLAttribute(name: "href", value: safeURL(url)) }
    /// `src`, refusing script URLs (see ``safeURL(_:)``).
    public static func src(_ url: String) -> HTMLAttribute { HTMLAttribute(name: "src", value: safeURL(url)) }
    /// `action`, refusing script URLs (see ``safeURL(_:)``).
    public static func action(_ url: String) -> HTMLAttribute { HTMLAttribute(name: "action", value: safeURL(url)) }

    /// The boolean attribute `checked`, without a value.
    public static let checked = HTMLAttribute(name: "checked", value: nil)
    /// The boolean attribute `disabled`, without a value.
    public static let disabled = HTMLAttribute(name: "disabled", value: nil)
    /// The boolean attribute `hidden`, without a value.
    public static let hidden = HTMLAttribute(name: "hidden", value: nil)
    /// The boolean attribute `readonly`, without a value.
    public static let readonly = HTMLAttribute(name: "readonly", value: nil)
    /// The boolean attribute `required`, without a value.
    public static let required = HTMLAttribute(name: "required", value: nil)
    /// The boolean attribute `selected`, without a value.
    public static let selected = HTMLAttribute(name: "selected", value: nil)

    /// Returns `url`, or `#` when its scheme would run script (`javascript:`, `vbscript:`, `data:`),
    /// whatever case, whitespace or control characters disguise it: escaping keeps a value inside its
    /// attribute but cannot make such a URL inert.
    public static func safeURL(_ url: String) -> String {
        var scheme = [UInt8]()
        for byte in url.utf8 {
            if byte == 0x3A {  // ":" ends the scheme
                let name = String(decoding: scheme, as: UTF8.self)
                return ["javascript", "vbscript", "data"].contains(name) ? "#" : url
            }
            if byte <= 0x20 {  // browsers skip whitespace and controls inside a scheme
                continue
            }
            let lower = (0x41 ... 0x5A).contains(byte) ? byte | 0x20 : byte
            guard (0x61 ... 0x7A).contains(lower) || (0x30 ... 0x39).contains(lower) || lower == 0x2B
                || lower == 0x2D || lower == 0x2E
            else {
                return url  // a path, query or fragment before any colon: relative URL
            }
            scheme.append(lower)
        }
        return url
    }
}
