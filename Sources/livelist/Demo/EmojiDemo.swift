import LiveListHTML
import LiveListServer

/// A grid of emoji that moves a few cells every tick: a stream of `move` operations.
actor EmojiDemo {
    static let emoji = Array("🍎🍐🍊🍋🍌🍉🍇🍓🫐🍈🍒🍑🥭🍍🥥🥝🍅🍆🥑🥦🥕🌽🌶🫑")

    private var order: [Int]
    private var generator: SystemRandomNumberGenerator
    private let list: HostedList

    private init(order: [Int], list: HostedList) {
        self.order = order
        self.list = list
        generator = SystemRandomNumberGenerator()
    }

    static func start(on app: LiveListApp, interval: Duration) async throws -> Demo {
        let order = Array(emoji.indices)
        let list = try await app.registry.hostApp(ListName("emoji")!, sections: render(order))
        let demo = EmojiDemo(order: order, list: list)
        return Demo(task: repeating(every: interval) { await demo.shuffle() })
    }

    func shuffle() async {
        for _ in 0 ..< 3 {
            let from = Int.random(in: 0 ..< order.count, using: &generator)
            let to = Int.random(in: 0 ..< order.count, using: &generator)
            order.insert(order.remove(at: from), at: to)
        }
        _ = try? await list.render(Self.render(order))
    }

    static func render(_ order: [Int]) -> [Section] {
        [Section(id: "fruit", header: SectionHeading("Every second, three fruit move"), cells: order.map { CellNode(EmojiCell(index: $0)) })]
    }
}

struct EmojiCell: IdentifiableComponent, Equatable {
    var index: Int
    var id: Int { index }
    var body: some HTML {
        span(.class("emoji"), .role("img"), .aria("label", "fruit \(index + 1)")) { String(EmojiDemo.emoji[index]) }
    }
}
