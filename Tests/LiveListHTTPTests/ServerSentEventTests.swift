@testable import LiveListHTTP
import Testing

/// The server's one SSE framer.
@Suite struct ServerSentEventTests {
    @Test func jsonDataIsOneLineAfterItsFields() {
        let json = Array(#"{"list":"l","ops":[{"op":"delete","cell":"a\nb"}]}"#.utf8)
        let event = String(decoding: ServerSentEvent.encode(id: "2", event: "patch", data: json), as: UTF8.self)
        #expect(event == "event: patch\nid: 2\ndata: {\"list\":\"l\",\"ops\":[{\"op\":\"delete\",\"cell\":\"a\\nb\"}]}\n\n")
    }

    @Test func everyLineBreakStartsADataLine() {
        let event = ServerSentEvent(id: "7", event: "note", data: "a\nb\r\nc\rd\n", retry: 1500)
        #expect(String(decoding: event.encoded, as: UTF8.self)
            == "event: note\nid: 7\nretry: 1500\ndata: a\ndata: b\ndata: c\ndata: d\ndata: \n\n")
        #expect(String(decoding: ServerSentEvent.encode(id: nil, event: nil, data: []), as: UTF8.self) == "data: \n\n")
    }

    @Test func fieldsCannotBreakTheFraming() {
        let event = ServerSentEvent(id: "1\n\nevent: evil", event: "x\r\ny\0", data: "d")
        #expect(String(decoding: event.encoded, as: UTF8.self) == "event: xy\nid: 1event: evil\ndata: d\n\n")
    }
}
