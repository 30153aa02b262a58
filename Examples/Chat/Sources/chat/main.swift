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

let app = try await LiveListApp()

// Only this list sticks to the bottom: its own configuration, from the server's.
var chatList = app.registry.configuration
chatList.options.stickToBottom = true
let composer = TextEntry(ChatAction.send, field: "text", label: "Message", placeholder: "Say something", button: "Send")
let room = try await app.host("chat", configuration: chatList, state: Room()) { room in
    Section(id: "messages", header: Header("Chat"), footer: composer) { Group(of: room.messages) { MessageCell(message: $0) } }
}
await room.onAction(ChatAction.self, changing: Room.self) { action, room in
    guard let text = try action.text("text", maxCharacters: 500, maxBytes: 2_000) else { return }
    let author = "guest-" + String((action.session ?? "anonymous").prefix(4))
    room.messages.append(Message(id: room.nextID, author: author, text: text))
    room.nextID += 1
    room.messages.removeFirst(max(0, room.messages.count - 200))
}
try await app.run { port in print("chat: http://127.0.0.1:\(port)/lists/chat") }
