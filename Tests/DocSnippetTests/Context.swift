import Foundation
import LiveListServer

// What the Swift blocks of docs/GUIDE.md and docs/MIGRATING-FROM-CARBON.md assume around them: an app,
// its store and registry, and the app's own data and helpers. Tools/python/livelist_tools/checks/doc_snippets.py makes each block
// a method of SnippetContext (Snippets.swift), so that it compiles against the code it describes.

/// A score of the guide's leaderboard.
struct Score: Sendable, Equatable {
    var name: String
    var points: Int
}

/// The guide's leaderboard cell.
struct ScoreCell: IdentifiableComponent, Equatable {
    var score: Score
    var id: String { score.name }
    var body: some HTML { span { score.name }; small { "\(score.points)" } }
}

/// A row of the guide's feed.
struct FeedRow: Sendable {
    var id: String
    var title: String
    var score: String
}

/// A message of the guide's inbox.
struct Message: Sendable {
    var text: String
}

/// The guide's todo item.
struct Item: IdentifiableComponent, Codable, Equatable {
    var id: Int
    var title: String
    var body: some HTML { span { title } }
}

/// The chat example's state.
struct Room: Codable, Equatable, Sendable {
    var lines: [String] = []
}

/// A component of the migration guide.
struct Label: Component, Equatable {
    var text: String
    var body: some HTML { span(.class("label")) { text } }
}

/// The migration guide's metrics.
enum Metrics {
    static func impression(_ id: String) {}
    static func hidden(_ id: String) {}
}

struct SnippetContext: Sendable {
    let app: LiveListApp
    let store: any ListStore
    var registry: ListRegistry { app.registry }
    let top: [Score] = []
    let row = FeedRow(id: "r1", title: "First", score: "10")
    let expired = FeedRow(id: "r0", title: "Old", score: "1")
    let old: [Section] = []
    let new: [Section] = []

    func messages(for session: String?) -> [Message] { [] }
    func render(_ messages: [Message]) -> [Section] { [] }
    @Sendable func render(_ room: Room) -> [Section] { [] }
    func send(_ bytes: [UInt8]) {}
}
