import LiveList
import Testing

/// A component written exactly as an app author would.
private struct BodyHelloMessage: IdentifiableComponent, Equatable {
    var name: String
    var id: String { name }
    var body: some HTML { span(.class("hello")) { "Hello \(name)" } }
}

private struct Badge: Component, Equatable {
    var count: Int
    var body: some HTML {
        if count > 0 {
            b { "\(count)" }
        } else {
            "none"
        }
    }
}

@Suite struct ComponentBodyTests {
    @Test func bodyRendersEscapedText() {
        var writer = HTMLWriter()
        BodyHelloMessage(name: "<Mia & Jules>").renderBody(into: &writer)
        #expect(writer.string == "<span class=\"hello\">Hello &lt;Mia &amp; Jules&gt;</span>")
    }

    @Test func typeErasedComponentRendersTheSameBytes() {
        let component = BodyHelloMessage(name: "Vincent")
        var direct = HTMLWriter()
        component.renderBody(into: &direct)
        var erased = HTMLWriter()
        AnyComponent(component).renderBody(into: &erased)
        var throughBody = HTMLWriter()
        AnyComponent(component).body.render(into: &throughBody)
        #expect(erased.bytes == direct.bytes)
        #expect(throughBody.bytes == direct.bytes)
    }

    @Test func cellAndViewNodesRenderTheirComponent() {
        var writer = HTMLWriter()
        CellNode(BodyHelloMessage(name: "Jules")).component.renderBody(into: &writer)
        ViewNode(Badge(count: 2)).renderBody(into: &writer)
        ViewNode(Badge(count: 0)).renderBody(into: &writer)
        #expect(writer.string == "<span class=\"hello\">Hello Jules</span><b>2</b>none")
    }

    @Test func identifiedWrapperRendersTheWrappedBody() {
        var writer = HTMLWriter()
        AnyComponent(Badge(count: 3).identified(by: "b")).renderBody(into: &writer)
        #expect(writer.string == "<b>3</b>")
    }

    @Test func componentWithoutBodyRendersNothing() {
        struct Plain: Component {}
        var writer = HTMLWriter()
        AnyComponent(Plain()).renderBody(into: &writer)
        #expect(writer.bytes.isEmpty)
    }
}
