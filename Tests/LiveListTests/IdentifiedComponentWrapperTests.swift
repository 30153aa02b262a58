import LiveList
import Testing

@Suite struct IdentifiedComponentWrapperTests {
    @Test func identifiedByValue() {
        let cell = Label(text: "Apple").identified(by: 3)
        #expect(cell.id == 3)
        #expect(cell.wrapped == Label(text: "Apple"))
    }

    @Test func identifiedByKeyPath() {
        let cell = Label(text: "Apple").identified(by: \.text)
        #expect(cell.id == "Apple")
        #expect(cell.wrapped.text == "Apple")
    }

    @Test func makesACellWithTheGivenKey() {
        let node = CellNode(Label(text: "Apple").identified(by: UInt8(9)))
        #expect(node.id.key == "9")
        #expect(node.component(as: Label.self) == Label(text: "Apple"))
    }

    @Test func forwardsContentUpdatesToTheWrapped() {
        let apple = Label(text: "Apple").identified(by: 1)
        #expect(!apple.shouldContentUpdate(with: Label(text: "Apple").identified(by: 1)))
        #expect(apple.shouldContentUpdate(with: Label(text: "Pear").identified(by: 1)))

        let opaque = Opaque(value: 1).identified(by: 1)
        #expect(opaque.shouldContentUpdate(with: Opaque(value: 1).identified(by: 1)))
    }

    @Test func forwardsRenderingDecisionsToTheWrapped() {
        let current = Versioned(version: 1).identified(by: "v")
        #expect(!current.shouldRender(next: Versioned(version: 2, isFrozen: true).identified(by: "v")))
        #expect(current.shouldRender(next: Versioned(version: 2).identified(by: "v")))
    }

    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    @Test func forwardsVisibilityToTheWrapped() {
        let log = VisibilityLog()
        let cell = Tracked(log: log).identified(by: 1)
        #expect(cell.reportsVisibility)
        cell.contentWillDisplay()
        cell.contentDidEndDisplay()
        #expect(log.willDisplay == 1)
        #expect(log.didEndDisplay == 1)
        #expect(!Label(text: "a").identified(by: 1).reportsVisibility)
    }
}
