/// One stage of a ``StagedChangeset``: a batch of changes applied together.
///
/// A batch follows the batch-update rules of UIKit and DifferenceKit: deletes, updates and the sources of
/// moves are positions *before* the stage; inserts and the targets of moves are positions *after* it.
/// Applying one batch means: replace the updated contents, take out the deleted and the moved items
/// (by their positions before), then put the inserted and moved items in at their positions after, in
/// ascending order. Which kinds a stage may hold, and the layout before and after it, is described on
/// ``StagedChangeset``; every other field of a stage is empty.
public struct Changeset: Equatable, Sendable {
    /// Which step of the staged plan this batch is.
    public enum Stage: Int, Sendable, Comparable, CustomStringConvertible {
        /// Element deletes and updates, section updates: all at positions in the source.
        case removeAndUpdate = 1
        /// Section inserts (empty sections) and section moves.
        case placeSections = 2
        /// Element inserts and moves, within and across sections.
        case placeElements = 3
        /// Section deletes, together with the elements still in them.
        case deleteSections = 4

        /// Stages compare in the order they are applied.
        public static func < (lhs: Stage, rhs: Stage) -> Bool {
            lhs.rawValue < rhs.rawValue
        }

        /// The stage's name, as in `removeAndUpdate`.
        public var description: String {
            switch self {
            case .removeAndUpdate: "removeAndUpdate"
            case .placeSections: "placeSections"
            case .placeElements: "placeElements"
            case .deleteSections: "deleteSections"
            }
        }
    }

    /// Which step of the plan this batch is.
    public var stage: Stage
    /// Indices of deleted sections, before the stage.
    public var sectionDeleted: [Int] = []
    /// Indices of inserted (empty) sections, after the stage.
    public var sectionInserted: [Int] = []
    /// Indices of sections whose own content changed, before the stage.
    public var sectionUpdated: [Int] = []
    /// Sections moved from an index before the stage to one after it.
    public var sectionMoved: [SectionMove] = []
    /// Paths of deleted elements, before the stage.
    public var elementDeleted: [ElementPath] = []
    /// Paths of inserted elements, after the stage.
    public var elementInserted: [ElementPath] = []
    /// Paths of elements whose content changed, before the stage.
    public var elementUpdated: [ElementPath] = []
    /// Elements moved from a path before the stage to a path after it.
    public var elementMoved: [ElementMove] = []

    /// Creates an empty batch for `stage`.
    public init(stage: Stage) {
        self.stage = stage
    }

    /// Creates a batch with the given changes.
    public init(
        stage: Stage,
        sectionDeleted: [Int] = [],
        sectionInserted: [Int] = [],
        sectionUpdated: [Int] = [],
        sectionMoved: [SectionMove] = [],
        elementDeleted: [ElementPath] = [],
        elementInserted: [ElementPath] = [],
        elementUpdated: [ElementPath] = [],
        elementMoved: [ElementMove] = []
    ) {
        self.stage = stage
        self.sectionDeleted = sectionDeleted
        self.sectionInserted = sectionInserted
        self.sectionUpdated = sectionUpdated
        self.sectionMoved = sectionMoved
        self.elementDeleted = elementDeleted
        self.elementInserted = elementInserted
        self.elementUpdated = elementUpdated
        self.elementMoved = elementMoved
    }

    /// The number of changes in this batch.
    public var changeCount: Int {
        sectionDeleted.count + sectionInserted.count + sectionUpdated.count + sectionMoved.count
            + elementDeleted.count + elementInserted.count + elementUpdated.count + elementMoved.count
    }

    /// Whether the batch holds no change.
    public var isEmpty: Bool {
        changeCount == 0
    }
}
