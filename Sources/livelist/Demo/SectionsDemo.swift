import LiveListHTML
import LiveListServer

/// A pangram whose words are sections and whose letters are cells: every tick one section operation
/// happens (reorder, rename, remove, add back), the section side of the protocol in real use. Its words
/// are a stored state, so that every node of a cluster shows the same moves.
enum SectionsDemo {
    struct Word: Codable, Equatable, Sendable {
        var id: Int
        var text: String
        var title: String
    }

    struct State: Codable, Equatable, Sendable {
        var words = SectionsDemo.pangram
        var removed: [Word] = []
        var tick = 0
    }

    static let pangram = "The quick brown fox jumps over the lazy dog".split(separator: " ").enumerated().map {
        Word(id: $0.offset, text: String($0.element), title: "Word \($0.offset + 1)")
    }

    static func start(on app: LiveListApp, interval: Duration) async throws -> Demo {
        let list = try await app.registry.hostApp(ListName("pangram")!, state: State(), render: { render($0.words) })
        return Demo(task: repeating(every: interval, on: app) { _ = try? await list.updateState(State.self, step) })
    }

    @Sendable static func step(_ state: inout State) {
        var generator = SystemRandomNumberGenerator()
        state.tick += 1
        switch state.tick % 4 {
        case 0 where state.words.count > 1:
            let from = Int.random(in: 0 ..< state.words.count, using: &generator)
            state.words.insert(state.words.remove(at: from), at: Int.random(in: 0 ..< state.words.count, using: &generator))
        case 1 where !state.words.isEmpty:
            let index = Int.random(in: 0 ..< state.words.count, using: &generator)
            let word = state.words[index]
            state.words[index].title = word.title.hasSuffix("!") ? "Word \(word.id + 1)" : word.text.uppercased() + "!"
        case 2 where state.words.count > 5:
            state.removed.append(state.words.remove(at: Int.random(in: 0 ..< state.words.count, using: &generator)))
        default:
            if let word = state.removed.popLast() {
                state.words.insert(word, at: Int.random(in: 0 ... state.words.count, using: &generator))
            } else if state.words.count > 1 {
                state.words.shuffle(using: &generator)
            }
        }
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
