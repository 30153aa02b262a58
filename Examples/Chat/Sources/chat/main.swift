import Foundation
import LiveListServer

/// A chat room shared by every viewer: the newest message at the bottom, and the list sticks to the
/// bottom as messages arrive (a per-list updater option). Each browser session posts under a name of
/// its own, taken from its session id; the room keeps the last 200 messages.
struct Message: Codable, Equatable, Sendable {
    var id: Int
    var author: String
    var text: String
}

struct Room: Codable, Equatable, Sendable {
    var messages: [Message] = []
    var nextID = 1
}

enum ChatAction: String, ListActions { case send, enter }

struct MessageCell: IdentifiableComponent, Equatable {
    var message: Message
    var id: Int { message.id }
    var body: some HTML {
        strong(.class("author")) { message.author }
        span(.class("text")) { message.text }
    }
}

struct Composer: Component, Equatable {
    var body: some HTML {
        actionField("text", .placeholder("Say something"), .aria("label", "Message"), .autocomplete("off"), .data("reset", "true"))
        actionButton(ChatAction.send) { "Send" }
    }
}

let app = try await LiveListApp(configuration: .fromEnvironment())

// Only this list sticks to the bottom: its own configuration, from the server's.
var chatList = app.registry.configuration
chatList.options.stickToBottom = true
let room = try await app.registry.hostApp(ListName("chat")!, configuration: chatList, state: Room()) { room in
    [Section(id: "messages", header: Header("Chat"), footer: Composer()) { Group(of: room.messages) { MessageCell(message: $0) } }]
}
await room.onAction(ChatAction.self, changing: Room.self) { action, room in
    let text = (action.fields["text"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    guard !text.isEmpty else { return }
    let author = "guest-" + String((action.session ?? "anonymous").prefix(4))
    room.messages.append(Message(id: room.nextID, author: author, text: String(text.prefix(500))))
    room.nextID += 1
    room.messages.removeFirst(max(0, room.messages.count - 200))
}
try await app.run { port in print("chat: http://127.0.0.1:\(port)/lists/chat") }
