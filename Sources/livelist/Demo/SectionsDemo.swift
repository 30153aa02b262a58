import LiveListHTML
import LiveListServer

/// A pangram whose words are sections and whose letters are cells: every tick one section operation
/// happens (reorder, rename, remove, add back), the section side of the protocol in real use.
actor SectionsDemo {
    struct Word: Equatable {
        var id: Int
        var text: String
        var title: String
    }

    static let pangram = "The quick brown fox jumps over the lazy dog".split(separator: " ").enumerated().map {
        Word(id: $0.offset, text: String($0.element), title: "Word \($0.offset + 1)")
    }

    private var words = SectionsDemo.pangram
    private var removed: [Word] = []
    private var tick = 0
    private var generator = SystemRandomNumberGenerator()
    private let list: HostedList

    private init(list: HostedList) {
        self.list = list
    }

    static func start(on app: LiveListApp, interval: Duration) async throws -> Demo {
        let list = try await app.registry.hostApp(ListName("pangram")!, sections: render(pangram))
        let demo = SectionsDemo(list: list)
        return Demo(task: repeating(every: interval) { await demo.step() })
    }

    func step() async {
        tick += 1
        switch tick % 4 {
        case 0 where words.count > 1:
            let from = Int.random(in: 0 ..< words.count, using: &generator)
            words.insert(words.remove(at: from), at: Int.random(in: 0 ..< words.count, using: &generator))
        case 1 where !words.isEmpty:
            let index = Int.random(in: 0 ..< words.count, using: &generator)
            words[index].title = words[index].title.hasSuffix("!") ? "Word \(words[index].id + 1)" : words[index].text.uppercased() + "!"
        case 2 where words.count > 5:
            removed.append(words.remove(at: Int.random(in: 0 ..< words.count, using: &generator)))
        default:
            if let word = removed.popLast() {
                words.insert(word, at: Int.random(in: 0 ... words.count, using: &generator))
            } else if words.count > 1 {
                words.shuffle(using: &generator)
            }
        }
        _ = try? await list.render(Self.render(words))
    }

    static func render(_ words: [Word]) -> [Section] {
        words.map { word in
            Section(
                id: "w\(word.id)",
                header: SectionHeading(word.title),
                cells: word.text.enumerated().map { CellNode(LetterCell(word: word.id, position: $0.offset, letter: $0.element)) }
            )
        }
    }
}

struct LetterCell: IdentifiableComponent, Equatable {
    var word: Int
    var position: Int
    var letter: Character
    var id: String { "\(word).\(position)" }
    var body: some HTML {
        span(.class("letter")) { String(letter) }
    }
}
