/// The changes that turn a source list of sections into a target list, as a sequence of batches
/// ("stages") that a consumer applies in order, like DifferenceKit's `StagedChangeset`.
///
/// Elements are matched by ``Differentiable/differenceIdentifier`` across the whole list (Heckel's
/// linear-time matching over a hash index of identifiers), sections likewise among sections. Survivors
/// keep their place when they lie on a longest increasing subsequence of old positions and move
/// otherwise, so every reorder costs the fewest moves. An element that survives is never deleted and
/// inserted again: it moves, also out of a deleted section or into an inserted one.
///
/// ## The stages and their indices
///
/// Each stage is a batch (see ``Changeset``): deletes, updates and move sources are positions before the
/// stage; inserts and move targets are positions after it. Empty stages are left out, so an unchanged list
/// gives no stage at all. Writing *L0* for the source, the stages are, in this order:
///
/// 1. ``Changeset/Stage-swift.enum/removeAndUpdate``, on *L0*:
///    `elementDeleted` holds the source paths of the elements that do not survive, *except those in
///    deleted sections* (stage 4 removes them with their section); `elementUpdated` the source paths of
///    surviving elements whose content changed (wherever they go); `sectionUpdated` the source indices of
///    surviving sections whose own content changed. Result *L1*: the source sections in source order,
///    holding their elements minus the deleted ones, with new contents.
/// 2. ``Changeset/Stage-swift.enum/placeSections``, from *L1* to *L2*: `sectionInserted` holds the indices
///    in *L2* of the new sections, which are inserted empty; `sectionMoved` takes surviving sections from
///    their source index to their index in *L2*. *L2* keeps every section that does not move (survivors on
///    the longest increasing subsequence, and the sections to be deleted) in source order, and places each
///    inserted or moved section right after the section that precedes it in the target (first, if none).
///    Without the sections to be deleted, *L2* lists the target's sections in target order.
/// 3. ``Changeset/Stage-swift.enum/placeElements``, from *L2* to *L3*: `elementMoved` takes surviving
///    elements from their path in *L2* (section index in *L2*, index among that section's elements left
///    after stage 1) to their path in *L3*; `elementInserted` holds the paths in *L3* of new elements.
///    In *L3*, each target section holds exactly its target elements and each section to be deleted holds
///    its source elements that do not survive, in source order; section indices are those of *L2*.
/// 4. ``Changeset/Stage-swift.enum/deleteSections``, on *L3*: `sectionDeleted` holds the indices in *L3* of
///    the deleted sections, which go together with the elements still in them. The result is the target.
///
/// ``layout`` tells what each section index of *L2* and *L3* is, so that a consumer can name the section
/// of an insert or a move (and the target element at a path after stage 3) without replaying the stages.
///
/// A flat list is diffed as a single section: it has stages 1 and 3 only, all paths in section 0.
///
/// ## Bad input
///
/// Identifiers must be unique: section identifiers among the sections, element identifiers across all
/// elements of a list. A duplicate in the target throws ``DiffError`` naming it. The source is normally
/// the target of the previous diff; a duplicate in the part of the source that has to be matched throws
/// as well. Elements at the common start and end of both lists are matched by position without hashing
/// (this makes an unchanged list nearly free); an inserted identifier that repeats one of theirs is still
/// reported as a duplicate.
public struct StagedChangeset: Equatable, Sendable {
    /// The stages, in the order they must be applied. Empty when nothing changed.
    public var stages: [Changeset]
    /// The sections of the intermediate layouts *L2* and *L3*, in order (stages 2 to 4 index into it).
    public var layout: [SectionSlot]

    /// Creates a staged changeset from given stages and intermediate layout.
    public init(stages: [Changeset] = [], layout: [SectionSlot] = []) {
        self.stages = stages
        self.layout = layout
    }

    /// The number of changes over all stages.
    public var changeCount: Int {
        stages.reduce(0) { $0 + $1.changeCount }
    }

    /// Whether there is no change at all.
    public var isEmpty: Bool {
        stages.isEmpty
    }

    /// Returns the stage of the given kind, if the changeset has one.
    public subscript(stage: Changeset.Stage) -> Changeset? {
        stages.first { $0.stage == stage }
    }

    /// Computes the changes from `source` to `target`, both lists of sections.
    ///
    /// - Throws: ``DiffError`` when identifiers repeat.
    @inlinable
    public init<Section: DifferentiableSection>(source: [Section], target: [Section]) throws(DiffError) {
        let sourceElements = source.map(\.elements)
        let targetElements = target.map(\.elements)
        var sectionPlan = try SectionPlan(
            sourceIDs: source.map(\.differenceIdentifier),
            targetIDs: target.map(\.differenceIdentifier)
        )
        sectionPlan.findUpdates(source: source, target: target)
        stages = try ElementPlan.stages(
            source: sourceElements,
            target: targetElements,
            sections: sectionPlan
        )
        layout = sectionPlan.layout
    }

    /// Computes the changes from `source` to `target`, both flat lists (diffed as one section).
    ///
    /// - Throws: ``DiffError`` when identifiers repeat.
    @inlinable
    public init<Element: Differentiable>(source: [Element], target: [Element]) throws(DiffError) {
        let sections = SectionPlan.single
        stages = try ElementPlan.stages(source: [source], target: [target], sections: sections)
        layout = sections.layout
    }
}

extension StagedChangeset: RandomAccessCollection {
    /// The index of the first stage.
    public var startIndex: Int { stages.startIndex }
    /// The index after the last stage.
    public var endIndex: Int { stages.endIndex }
    /// The stage at `position`.
    public subscript(position: Int) -> Changeset { stages[position] }
}
