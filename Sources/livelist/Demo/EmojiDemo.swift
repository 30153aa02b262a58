import LiveListHTML
import LiveListServer

/// A grid of emoji that moves a few cells every tick: a stream of `move` operations. Its order is a
/// stored state, so that every node of a cluster shows the same moves.
enum EmojiDemo {
    static let emoji = Array("🍎🍐🍊🍋🍌🍉🍇🍓🫐🍈🍒🍑🥭🍍🥥🥝🍅🍆🥑🥦🥕🌽🌶🫑")

    struct State: Codable, Equatable, Sendable {
        var order: [Int]
    }

    static func start(on app: LiveListApp, interval: Duration) async throws -> Demo {
        let list = try await app.registry.hostApp(ListName("emoji")!, state: State(order: Array(emoji.indices)), render: render)
        return Demo(task: repeating(every: interval, on: app) { _ = try? await list.updateState(State.self, shuffle) })
    }

    /// Moves three fruit.
    @Sendable static func shuffle(_ state: inout State) {
        var generator = SystemRandomNumberGenerator()
        guard !state.order.isEmpty else { return }
        for _ in 0 ..< 3 {
            let from = Int.random(in: 0 ..< state.order.count, using: &generator)
            let to = Int.random(in: 0 ..< state.order.count, using: &generator)
            state.order.insert(state.order.remove(at: from), at: to)
        }
    }

    @Sendable static func render(_ state: State) -> [Section] {
        // A stored order that is not a permutation of the fruit (an older release's) renders the fruit it can.
        let order = state.order.filter { emoji.indices.contains($0) }
        return [Section(id: "fruit", header: SectionHeading("Every second, three fruit move"),
                        cells: order.map { CellNode(EmojiCell(index: $0)) })]
    }
}

struct EmojiCell: IdentifiableComponent, Equatable {
    var index: Int
    var id: Int { index }
    var body: some HTML {
        span(.class("emoji"), .role("img"), .aria("label", "fruit \(index + 1)")) { String(EmojiDemo.emoji[index]) }
    }
}
