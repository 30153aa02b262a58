/// An element with a start tag, attributes, content and an end tag.
public struct HTMLElement<Content: HTML>: HTML {
    /// The tag name.
    public var tag: HTMLTag
    /// The attributes, in order.
    public var attributes: [HTMLAttribute]
    /// The content.
    public var content: Content

    /// Creates an element from its tag, attributes and content.
    @inlinable
    public init(_ tag: HTMLTag, attributes: [HTMLAttribute] = [], content: Content) {
        self.tag = tag
        self.attributes = attributes
        self.content = content
    }

    /// Writes the start tag, the content and the end tag (none for a void tag).
    @inlinable
    public func render(into writer: inout HTMLWriter) {
        writer.bytes.append(0x3C)  // <
        writer.appendRaw(tag.name)
        for attribute in attributes {
            attribute.render(into: &writer)
        }
        writer.bytes.append(0x3E)  // >
        if !tag.isVoid {
            content.render(into: &writer)
            writer.appendRaw("</")
            writer.appendRaw(tag.name)
            writer.bytes.append(0x3E)
        }
    }
}

extension HTMLElement: Sendable where Content: Sendable {}

/// A tag name, known to be safe to write between `<` and `>`.
public struct HTMLTag: Sendable, Hashable {
    /// The name, lowercase ASCII letters, digits and `-`.
    public let name: String
    /// Whether the element has no content and no end tag (`br`, `input`, …).
    public let isVoid: Bool

    /// Creates a tag. Returns nil unless `name` is a letter followed by ASCII letters, digits or `-`
    /// (custom elements included), so that a tag name can never inject markup.
    public init?(_ name: String, isVoid: Bool = false) {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, (0x61 ... 0x7A).contains(first | 0x20),
            bytes.allSatisfy({ (0x61 ... 0x7A).contains($0 | 0x20) || (0x30 ... 0x39).contains($0) || $0 == 0x2D })
        else {
            return nil
        }
        self.name = name.lowercased()
        self.isVoid = isVoid
    }

    @usableFromInline
    init(known name: String, isVoid: Bool = false) {
        self.name = name
        self.isVoid = isVoid
    }
}

/// An element with any valid tag name; nil when the name is not a valid tag name.
public func element<Content: HTML>(
    _ name: String,
    _ attributes: HTMLAttribute...,
    @HTMLBuilder content: () -> Content
) -> HTMLElement<Content>? {
    HTMLTag(name).map { HTMLElement($0, attributes: attributes, content: content()) }
}

extension HTMLTag {
    /// The `<div>` tag.
    public static let div = HTMLTag(known: "div")
    /// The `<span>` tag.
    public static let span = HTMLTag(known: "span")
    /// The `<ul>` tag.
    public static let ul = HTMLTag(known: "ul")
    /// The `<ol>` tag.
    public static let ol = HTMLTag(known: "ol")
    /// The `<li>` tag.
    public static let li = HTMLTag(known: "li")
    /// The `<section>` tag.
    public static let section = HTMLTag(known: "section")
    /// The `<article>` tag.
    public static let article = HTMLTag(known: "article")
    /// The `<header>` tag.
    public static let header = HTMLTag(known: "header")
    /// The `<footer>` tag.
    public static let footer = HTMLTag(known: "footer")
    /// The `<main>` tag.
    public static let main = HTMLTag(known: "main")
    /// The `<p>` tag.
    public static let p = HTMLTag(known: "p")
    /// The `<h2>` tag.
    public static let h2 = HTMLTag(known: "h2")
    /// The `<h3>` tag.
    public static let h3 = HTMLTag(known: "h3")
    /// The `<tbody>` tag.
    public static let tbody = HTMLTag(known: "tbody")
    /// The `<tr>` tag.
    public static let tr = HTMLTag(known: "tr")
}
