/// The position of an element: its section index and its index within that section.
public struct ElementPath: Hashable, Sendable, CustomStringConvertible {
    /// The index of the element within its section.
    public var element: Int
    /// The index of the section.
    public var section: Int

    /// Creates a path.
    @inlinable
    public init(element: Int, section: Int) {
        self.element = element
        self.section = section
    }

    /// `[section, element]`.
    public var description: String {
        "[\(section), \(element)]"
    }
}

/// A move of a section, from an index before its stage to an index after it.
public struct SectionMove: Hashable, Sendable {
    /// The index before the stage.
    public var source: Int
    /// The index after the stage.
    public var target: Int

    /// Creates a move of a section from a source index to a target index.
    @inlinable
    public init(source: Int, target: Int) {
        self.source = source
        self.target = target
    }
}

/// A move of an element, from a path before its stage to a path after it (possibly in another section).
public struct ElementMove: Hashable, Sendable {
    /// The path before the stage.
    public var source: ElementPath
    /// The path after the stage.
    public var target: ElementPath

    /// Creates a move of an element from a source path to a target path.
    @inlinable
    public init(source: ElementPath, target: ElementPath) {
        self.source = source
        self.target = target
    }
}

/// What a section of the intermediate layouts *L2* and *L3* of a ``StagedChangeset`` is.
public enum SectionSlot: Hashable, Sendable {
    /// The target section at this index of the target (in *L2* it may still hold source elements).
    case target(Int)
    /// The source section at this index of the source, which stage 4 deletes.
    case deleted(source: Int)
}
