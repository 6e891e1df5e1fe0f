import QtQuick
import QtQuick.Controls.Material
import QtTest
import Ember

// Messages as the chat shows them: Markdown parsed in C++, line breaks kept, reasoning folded
// under "Thought for N s".
Item {
    id: root
    width: 600
    height: 600

    // The chat's own view rows (what it shows), set by the test.
    readonly property ChatController chat: fixture.chat()
    ChatView {
        id: view
        anchors.fill: parent
        controller: root.chat
    }

    TestCase {
        name: "Markdown"
        when: windowShown

        function init() { fixture.removeFrom(root.chat.messages, 0) }

        function findAll(item, name, out) {
            if (item.objectName === name && item.visible) out.push(item)
            for (let i = 0; i < item.children.length; ++i) findAll(item.children[i], name, out)
            return out
        }
        function texts(row) {
            return findAll(view.itemAtIndex(row), "proseText", []).map(t => t.getText(0, t.length))
        }
        function show(content, reasoningMs) {
            fixture.append(root.chat.messages, 1, "assistant", content, true, false, reasoningMs || 0)
            view.forceLayout()  // the view takes model changes in at its next layout
            return view.itemAtIndex(0)
        }

        function test_singleNewlinesAreLineBreaks() {
            show("Roses are red\nViolets are blue")
            const prose = findAll(view.itemAtIndex(0), "proseText", [])
            compare(prose.length, 1)
            compare(prose[0].lineCount, 2, "two lines, not one merged line")
        }

        function test_blocksAndFormatting() {
            show("# Title\n\nSome *emphasis* and `code`.\n\n- one\n- two\n\n```js\nlet a = 1\n```\n<b>raw</b>")
            const t = texts(0)
            compare(t.length, 4, JSON.stringify(t))
            compare(t[0], "Title")
            compare(t[1], "Some emphasis and code.")
            verify(t[2].indexOf("one") >= 0 && t[2].indexOf("two") >= 0)
            compare(t[3], "<b>raw</b>", "raw HTML is shown as text")
            compare(findAll(view.itemAtIndex(0), "codeText", [])[0].text, "let a = 1")
        }

        function test_storedReasoningIsCollapsedWithItsDuration() {
            const d = show("<think>\nThe user wants 2+2.\n</think>\n\nThe answer is 4.", 12400)
            const header = findAll(d, "reasoningHeader", [])[0]
            verify(header)
            verify(header.text.indexOf("Thought for 12 s") >= 0, header.text)
            compare(texts(0), ["The answer is 4."], "the reasoning is folded away")
            mouseClick(header)
            compare(texts(0), ["The user wants 2+2.", "The answer is 4."])
            mouseClick(header)
            compare(texts(0), ["The answer is 4."])
        }

        function test_streamedReasoningShowsThenFolds() {
            fixture.append(root.chat.messages, 0, "assistant", "", false, true)
            fixture.appendText(root.chat.messages, "<think>\nLet me see")
            view.forceLayout()
            tryVerify(() => texts(0).length === 1)
            const d = view.itemAtIndex(0)
            const header = findAll(d, "reasoningHeader", [])[0]
            verify(header.text.indexOf("Thinking") >= 0, header.text)
            compare(texts(0), ["Let me see"], "the reasoning shows while it runs")
            fixture.advance(7000)
            fixture.appendText(root.chat.messages, ", yes.</think>\n\nYes.")
            tryVerify(() => header.text.indexOf("Thought for 7 s") >= 0, 5000, header.text)
            verify(header.text.indexOf("Thought for 7 s") >= 0, header.text)
            compare(texts(0), ["Yes."], "folded when the answer starts")
        }

        function test_noReasoningNoHeader() {
            const d = show("Plain answer")
            compare(findAll(d, "reasoningHeader", []).length, 0)
        }
    }
}
