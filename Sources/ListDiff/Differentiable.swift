/// A type whose values can be matched between two versions of a list and compared for changes.
///
/// Two values are *the same element* when their ``differenceIdentifier``s are equal; the same element
/// *changed* when ``isContentEqual(to:)`` answers `false`. Identity decides inserts, deletes and moves;
/// content equality decides updates.
///
///     struct Todo: Differentiable {
///         var id: Int
///         var title: String
///         var differenceIdentifier: Int { id }
///         func isContentEqual(to source: Todo) -> Bool { title == source.title }
///     }
public protocol Differentiable {
    /// The type of the identifier that matches an element across versions.
    associatedtype DifferenceIdentifier: Hashable

    /// The identifier that matches this element with its previous version. Must be unique in a list.
    var differenceIdentifier: DifferenceIdentifier { get }

    /// Returns whether this element's content equals that of `source`, its previous version.
    ///
    /// - Parameter source: The element with the same identifier in the source list.
    /// - Returns: `false` when the element must be reported as updated.
    func isContentEqual(to source: Self) -> Bool
}

extension Differentiable where Self: Equatable {
    /// Content equality defaults to `==`.
    @inlinable
    public func isContentEqual(to source: Self) -> Bool {
        self == source
    }
}

extension Differentiable where Self: Hashable {
    /// A hashable value is, by default, its own identifier.
    @inlinable
    public var differenceIdentifier: Self {
        self
    }
}

/// A section of a list: itself differentiable (its identifier and its own content, such as a header),
/// and holding the elements it contains.
///
/// The differ matches sections by their identifiers and elements by theirs, across the whole list:
/// an element whose section changed is a move, never a delete and an insert.
public protocol DifferentiableSection: Differentiable {
    /// The type of the elements of the section.
    associatedtype Element: Differentiable

    /// The elements of the section, in order.
    var elements: [Element] { get }
}

/// A minimal section: a differentiable model (identity and content of the section itself) and its elements.
public struct ArraySection<Model: Differentiable, Element: Differentiable>: DifferentiableSection {
    /// The section's own value: its identifier and content (a header, say).
    public var model: Model
    /// The elements of the section.
    public var elements: [Element]

    /// Creates a section from its model and elements.
    @inlinable
    public init(model: Model, elements: [Element]) {
        self.model = model
        self.elements = elements
    }

    /// The model's identifier: sections are matched by their models.
    @inlinable
    public var differenceIdentifier: Model.DifferenceIdentifier {
        model.differenceIdentifier
    }

    /// Sections compare their models only; their elements are diffed one by one.
    @inlinable
    public func isContentEqual(to source: ArraySection) -> Bool {
        model.isContentEqual(to: source.model)
    }
}

extension ArraySection: Equatable where Model: Equatable, Element: Equatable {}
extension ArraySection: Hashable where Model: Hashable, Element: Hashable {}
extension ArraySection: Sendable where Model: Sendable, Element: Sendable {}
