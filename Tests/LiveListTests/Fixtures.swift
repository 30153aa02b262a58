import LiveList
import Synchronization

// MARK: - Components

/// An `Equatable` component without an id: updated only when its text changes.
struct Label: Component, Equatable {
    var text: String
}

/// A header component, given to `Section(id:header:…)` directly.
struct Header: Component, Equatable {
    var title: String

    init(_ title: String) {
        self.title = title
    }
}

/// A footer component.
struct Footer: Component, Equatable {
    var text: String

    init(_ text: String) {
        self.text = text
    }
}

/// An identifiable `Equatable` cell with an integer id.
struct Row: IdentifiableComponent, Equatable {
    var id: Int
    var text: String = ""
}

/// An identifiable cell whose id is its name.
struct HelloMessage: IdentifiableComponent, Equatable {
    var name: String
    var id: String { name }
}

/// A component that is not `Equatable`: updated on every render by default.
struct Opaque: Component {
    var value: Int
}

/// A component whose rules are asymmetric, so that the direction of every call can be checked:
/// its content updates only when `version` grows, and it renders again only when `next` is not frozen.
struct Versioned: Component {
    var version: Int
    var isFrozen = false

    func shouldContentUpdate(with next: Versioned) -> Bool {
        next.version > version
    }

    func shouldRender(next: Versioned) -> Bool {
        !next.isFrozen
    }
}

/// Counts the visibility callbacks of the components that share it.
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
final class VisibilityLog: Sendable {
    private let counts = Mutex((willDisplay: 0, didEndDisplay: 0))

    var willDisplay: Int { counts.withLock { $0.willDisplay } }
    var didEndDisplay: Int { counts.withLock { $0.didEndDisplay } }

    func recordWillDisplay() { counts.withLock { $0.willDisplay += 1 } }
    func recordDidEndDisplay() { counts.withLock { $0.didEndDisplay += 1 } }
}

/// A component that asks for visibility reports and records them.
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
struct Tracked: Component {
    var log: VisibilityLog

    var reportsVisibility: Bool { true }

    func contentWillDisplay() {
        log.recordWillDisplay()
    }

    func contentDidEndDisplay() {
        log.recordDidEndDisplay()
    }
}

// MARK: - Ids

/// An id type of its own, whose key joins its parts.
struct MemberID: ListKeyConvertible {
    var team: String
    var login: String

    var listKey: String { team + "/" + login }
}

/// An id whose key is its raw value.
enum Tab: String, ListKeyConvertible {
    case inbox
    case archive
}

// MARK: - Inspecting results

/// The keys of cells, in order.
func keys(_ cells: [CellNode]) -> [String] {
    cells.map(\.id.key)
}

/// The layout of sections, one string per section: `"key[cell,cell]"`.
func layout(_ sections: [Section]) -> [String] {
    sections.map { "\($0.id.key)[\(keys($0.cells).joined(separator: ","))]" }
}

/// The text of each cell whose component is a `Label`, `Row` or `HelloMessage`.
func texts(_ cells: [CellNode]) -> [String] {
    cells.map { cell in
        if let label = cell.component(as: Label.self) {
            return label.text
        }
        if let row = cell.component(as: Row.self) {
            return row.text
        }
        return cell.component(as: HelloMessage.self)?.name ?? "?"
    }
}
