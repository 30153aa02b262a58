/// HTML content: something that writes itself into an ``HTMLWriter``.
///
/// Build it with ``HTMLBuilder``: elements such as ``div(_:content:)``, strings (escaped), `if`, `switch`,
/// `for` and optionals. The types compose statically, so rendering needs no existentials.
///
///     span(.class("hello")) { "Hello \(name)" }   // the name is escaped
public protocol HTML {
    /// Writes this content into `writer`.
    func render(into writer: inout HTMLWriter)
}

extension HTML {
    /// This content as UTF-8 bytes.
    @inlinable
    public func renderedBytes() -> [UInt8] {
        var writer = HTMLWriter()
        render(into: &writer)
        return writer.bytes
    }

    /// This content as a string.
    @inlinable
    public func renderedString() -> String {
        String(decoding: renderedBytes(), as: UTF8.self)
    }
}

/// Text, escaped when rendered.
public struct HTMLText: HTML, Sendable {
    /// The unescaped text.
    public var text: String

    /// Creates text from a string, escaped when written.
    @inlinable
    public init(_ text: String) {
        self.text = text
    }

    /// Writes the text, escaped.
    @inlinable
    public func render(into writer: inout HTMLWriter) {
        writer.appendText(text)
    }
}

/// Markup written into the page exactly as given, without escaping.
///
/// The name says it: whatever this holds can run script in the page. Use it only for markup that the
/// program itself produced or sanitised, never for data from users.
public struct UnsafeRawHTML: HTML, Sendable {
    /// The markup.
    public var markup: String

    /// Wraps markup that is written as it is, unescaped: never pass it text a user typed.
    @inlinable
    public init(_ markup: String) {
        self.markup = markup
    }

    /// Writes the markup as it is.
    @inlinable
    public func render(into writer: inout HTMLWriter) {
        writer.appendRaw(markup)
    }
}

/// No content.
public struct EmptyHTML: HTML, Sendable {
    /// Creates the empty content.
    @inlinable
    public init() {}

    /// Writes nothing.
    @inlinable
    public func render(into writer: inout HTMLWriter) {}
}

/// Two pieces of content, one after the other (what a builder block of several lines becomes).
public struct HTMLPair<First: HTML, Second: HTML>: HTML {
    /// The first part.
    public var first: First
    /// The second part.
    public var second: Second

    /// Creates the sequence of two parts.
    @inlinable
    public init(_ first: First, _ second: Second) {
        self.first = first
        self.second = second
    }

    /// Writes the first part, then the second.
    @inlinable
    public func render(into writer: inout HTMLWriter) {
        first.render(into: &writer)
        second.render(into: &writer)
    }
}

/// One of two kinds of content (what `if`/`else` and `switch` become).
public enum HTMLEither<First: HTML, Second: HTML>: HTML {
    /// The `if` branch, or the first case.
    case first(First)
    /// The `else` branch, or a later case.
    case second(Second)

    /// Writes the branch that was taken.
    @inlinable
    public func render(into writer: inout HTMLWriter) {
        switch self {
        case let .first(content): content.render(into: &writer)
        case let .second(content): content.render(into: &writer)
        }
    }
}

extension HTMLPair: Sendable where First: Sendable, Second: Sendable {}
extension HTMLEither: Sendable where First: Sendable, Second: Sendable {}

extension Optional: HTML where Wrapped: HTML {
    /// Writes the wrapped content, or nothing.
    @inlinable
    public func render(into writer: inout HTMLWriter) {
        if let content = self {
            content.render(into: &writer)
        }
    }
}

extension Array: HTML where Element: HTML {
    /// Writes every element, in order.
    @inlinable
    public func render(into writer: inout HTMLWriter) {
        for content in self {
            content.render(into: &writer)
        }
    }
}

/// Builds ``HTML`` from statements: elements, strings (escaped), `if`, `if`/`else`, `switch`, `for`.
@resultBuilder
public enum HTMLBuilder {
    /// A line of a builder closure that is already HTML: itself.
    @inlinable
    public static func buildExpression<Content: HTML>(_ content: Content) -> Content {
        content
    }

    /// A string is text, escaped when rendered.
    @inlinable
    public static func buildExpression(_ text: String) -> HTMLText {
        HTMLText(text)
    }

    /// An empty closure: no content.
    @inlinable
    public static func buildBlock() -> EmptyHTML {
        EmptyHTML()
    }

    /// The first line of a closure: itself.
    @inlinable
    public static func buildPartialBlock<Content: HTML>(first: Content) -> Content {
        first
    }

    /// Each next line, appended to the lines before it.
    @inlinable
    public static func buildPartialBlock<Accumulated: HTML, Next: HTML>(
        accumulated: Accumulated,
        next: Next
    ) -> HTMLPair<Accumulated, Next> {
        HTMLPair(accumulated, next)
    }

    /// An `if` without `else`: the content, or nothing.
    @inlinable
    public static func buildOptional<Content: HTML>(_ content: Content?) -> Content? {
        content
    }

    /// The `if` branch of an `if`/`else` or the first case of a `switch`.
    @inlinable
    public static func buildEither<First: HTML, Second: HTML>(first: First) -> HTMLEither<First, Second> {
        .first(first)
    }

    /// The `else` branch of an `if`/`else` or a later case of a `switch`.
    @inlinable
    public static func buildEither<First: HTML, Second: HTML>(second: Second) -> HTMLEither<First, Second> {
        .second(second)
    }

    /// A `for` loop: every iteration's content, in order.
    @inlinable
    public static func buildArray<Content: HTML>(_ contents: [Content]) -> [Content] {
        contents
    }

    /// Content inside `if #available`.
    @inlinable
    public static func buildLimitedAvailability<Content: HTML>(_ content: Content) -> Content {
        content
    }
}

/// Any HTML content, type-erased (for content whose type is known only at run time).
public struct AnyHTML: HTML {
    /// The content.
    public let base: any HTML

    /// Wraps any content.
    @inlinable
    public init(_ base: any HTML) {
        if let erased = base as? AnyHTML {
            self = erased
        } else {
            self.base = base
        }
    }

    /// Writes the wrapped content.
    @inlinable
    public func render(into writer: inout HTMLWriter) {
        base.render(into: &writer)
    }
}
