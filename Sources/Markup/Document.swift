/// A whole HTML document: `<!doctype html>` and then its content (an ``html(_:content:)`` element).
///
///     document {
///         html(.lang("en")) {
///             head { meta(.custom("charset", "utf-8")); title { page.title } }
///             body { main { page.content } }
///         }
///     }
public struct HTMLDocument<Content: HTML>: HTML {
    /// What follows the doctype.
    public var content: Content

    /// Creates the document.
    @inlinable
    public init(content: Content) {
        self.content = content
    }

    /// Writes the doctype, then the content.
    @inlinable
    public func render(into writer: inout HTMLWriter) {
        writer.appendRaw("<!doctype html>\n")
        content.render(into: &writer)
    }
}

extension HTMLDocument: Sendable where Content: Sendable {}

/// A whole document: `<!doctype html>` followed by `content`.
@inlinable
public func document<Content: HTML>(@HTMLBuilder _ content: () -> Content) -> HTMLDocument<Content> {
    HTMLDocument(content: content())
}

/// A `<script src="…">` of a file (never inline code: a page's policy refuses inline script), deferred
/// by default so that it runs once the page is parsed.
@inlinable
public func script(src url: String, deferred: Bool = true, _ attributes: HTMLAttribute...) -> HTMLElement<EmptyHTML> {
    var all = [HTMLAttribute.src(url)]
    if deferred {
        all.append(HTMLAttribute(name: "defer", value: nil))
    }
    return HTMLElement(HTMLTag(known: "script"), attributes: all + attributes, content: EmptyHTML())
}

/// A `<link rel="stylesheet" href="…">`.
@inlinable
public func stylesheet(_ url: String) -> HTMLElement<EmptyHTML> {
    link(.rel("stylesheet"), .href(url))
}

/// Content rendered once, kept as its bytes: what a page that is built in steps (a layout around
/// content rendered before it) holds. It is made only by rendering other ``HTML``, so it is as safe as
/// what it was rendered from.
public struct RenderedHTML: HTML, Sendable {
    /// The markup.
    public let bytes: [UInt8]

    /// Renders `content` now and keeps its bytes.
    @inlinable
    public init(_ content: some HTML) {
        bytes = content.renderedBytes()
    }

    /// Renders the builder's content now and keeps its bytes.
    @inlinable
    public init<Content: HTML>(@HTMLBuilder _ content: () -> Content) {
        self.init(content())
    }

    /// Nothing.
    public static let empty = RenderedHTML(EmptyHTML())

    /// Writes the kept bytes.
    @inlinable
    public func render(into writer: inout HTMLWriter) {
        writer.appendRaw(bytes)
    }
}

/// A form control (a button, an input) that belongs to a form elsewhere on the page through its `form`
/// attribute, whose value is decided when it is written: the writer's ``HTMLWriter/formID`` when set,
/// else ``fallbackForm``. A control inside a cell of a list so belongs to that list's form on any page
/// that shows the list.
public struct FormControl<Content: HTML>: HTML {
    /// The element, without its `form` attribute.
    public var element: HTMLElement<Content>
    /// The form's id when the writer names none.
    public var fallbackForm: String

    /// Creates the control.
    @inlinable
    public init(_ element: HTMLElement<Content>, fallbackForm: String) {
        self.element = element
        self.fallbackForm = fallbackForm
    }

    /// Writes the element with `form="ID"` first among its attributes.
    @inlinable
    public func render(into writer: inout HTMLWriter) {
        writer.bytes.append(0x3C)  // <
        writer.appendRaw(element.tag.name)
        writer.appendAttribute(name: "form", value: writer.formID ?? fallbackForm)
        for attribute in element.attributes {
            attribute.render(into: &writer)
        }
        writer.bytes.append(0x3E)  // >
        if !element.tag.isVoid {
            element.content.render(into: &writer)
            writer.appendRaw("</")
            writer.appendRaw(element.tag.name)
            writer.bytes.append(0x3E)
        }
    }
}

extension FormControl: Sendable where Content: Sendable {}
