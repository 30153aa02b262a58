import Markup
import Testing

@Suite struct BuilderTests {
    @Test func nestedElementsAndText() {
        let name = "Mia"
        let html = ul(.class("people")) {
            li { "Hello " ; strong { name } }
            li(.hidden)
        }
        #expect(html.renderedString() == "<ul class=\"people\"><li>Hello <strong>Mia</strong></li><li hidden></li></ul>")
    }

    @Test func ifWithoutElse() {
        func badge(_ show: Bool) -> some HTML {
            span { if show { b { "!" } } }
        }
        #expect(badge(true).renderedString() == "<span><b>!</b></span>")
        #expect(badge(false).renderedString() == "<span></span>")
    }

    @Test func ifElseAndSwitch() {
        func state(_ count: Int) -> some HTML {
            p {
                if count == 0 { "none" } else { em { "\(count)" } }
                switch count {
                case 0: "."
                default: "!"
                }
            }
        }
        #expect(state(0).renderedString() == "<p>none.</p>")
        #expect(state(3).renderedString() == "<p><em>3</em>!</p>")
    }

    @Test func forLoopAndOptional() {
        let detail: String? = nil
        let html = ol {
            for index in 1 ... 3 { li { "\(index)" } }
            if let detail { small { detail } }
        }
        #expect(html.renderedString() == "<ol><li>1</li><li>2</li><li>3</li></ol>")
    }

    @Test func manyChildrenHaveNoLimit() {
        let html = div {
            "1"; "2"; "3"; "4"; "5"; "6"; "7"; "8"; "9"; "10"; "11"; "12"
        }
        #expect(html.renderedString() == "<div>123456789101112</div>")
    }

    @Test func voidElementsHaveNoEndTag() {
        #expect(div { br(); hr(); img(.src("/a.png"), .alt("A")) }.renderedString()
            == "<div><br><hr><img src=\"/a.png\" alt=\"A\"></div>")
    }

    @Test func emptyBuilder() {
        #expect(div {}.renderedString() == "<div></div>")
    }
}
