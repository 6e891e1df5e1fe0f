import QtQuick
import QtTest
import "../../../ui"

// The chat view against a mock controller with a ListModel of messages.
Item {
    id: root
    width: 700
    height: 500

    ListModel {
        id: messages
        ListElement { messageId: 1; role: "user"; content: "Show me C"; complete: true; streaming: false }
        ListElement {
            messageId: 2; role: "assistant"; complete: true; streaming: false
            content: "Here is **bold** prose.\n\n```c\nint main() { return 0; }\n```\n\nAnd more prose."
        }
    }

    QtObject {
        id: mock
        property bool generating: false
        property var messages: messages
        property var copied: []
        property int regenerated: 0
        property var edits: []
        function copyText(t) { copied = copied.concat([t]) }
        function regenerate() { regenerated += 1 }
        property int continued: 0
        function continueResponse() { continued += 1 }
        function editAndResend(row, text) { edits = edits.concat([[row, text]]) }
    }

    ChatView {
        id: view
        anchors.fill: parent
        controller: mock
    }

    TestCase {
        name: "ChatView"
        when: windowShown

        function findAll(item, name, out) {
            if (item.objectName === name) out.push(item)
            for (let i = 0; i < item.children.length; ++i) findAll(item.children[i], name, out)
            return out
        }
        function delegateAt(row) { return view.itemAtIndex(row) }

        function test_rendersProseAndCode() {
            compare(view.count, 2)
            const answer = delegateAt(1)
            verify(answer)
            const code = findAll(answer, "codeText", [])
            compare(code.length, 1, "one code block")
            compare(code[0].text, "int main() { return 0; }")
            compare(code[0].font.family, "monospace")
        }

        function test_actionButtons() {
            const user = delegateAt(0), answer = delegateAt(1)
            verify(findAll(user, "editButton", [])[0].visible)
            verify(!findAll(answer, "editButton", [])[0].visible)
            verify(findAll(answer, "regenerateButton", [])[0].visible, "the last answer can be regenerated")
            verify(!findAll(user, "regenerateButton", [])[0].visible)
            mouseClick(findAll(answer, "copyMessageButton", [])[0])
            compare(mock.copied.length, 1)
            verify(mock.copied[0].startsWith("Here is **bold**"))
            mouseClick(findAll(answer, "regenerateButton", [])[0])
            compare(mock.regenerated, 1)
        }

        // After a crash: an incomplete last answer offers Continue and Regenerate; an unanswered
        // last message offers Regenerate.
        function test_incompleteOrUnansweredLastMessage() {
            const answer = delegateAt(1)
            verify(!findAll(answer, "continueButton", [])[0].visible, "a complete answer")
            messages.setProperty(1, "complete", false)
            verify(findAll(answer, "continueButton", [])[0].visible)
            verify(findAll(answer, "regenerateButton", [])[0].visible)
            mouseClick(findAll(answer, "continueButton", [])[0])
            compare(mock.continued, 1)
            const saved = messages.get(1).content
            messages.remove(1)
            wait(50)
            const user = delegateAt(0)
            verify(findAll(user, "regenerateButton", [])[0].visible, "an unanswered message")
            verify(!findAll(user, "continueButton", [])[0].visible)
            messages.append({ messageId: 2, role: "assistant", content: saved, complete: true,
                              streaming: false })
            wait(50)
            verify(!findAll(delegateAt(0), "regenerateButton", [])[0].visible)
        }

        function test_editAndResend() {
            const user = delegateAt(0)
            mouseClick(findAll(user, "editButton", [])[0])
            verify(user.editing)
            const area = findAll(user, "editArea", [])[0]
            compare(area.text, "Show me C")
            area.text = "Show me Rust"
            mouseClick(findAll(user, "saveAndSendButton", [])[0])
            compare(mock.edits.length, 1)
            compare(mock.edits[0][0], 0)
            compare(mock.edits[0][1], "Show me Rust")
            verify(!user.editing)
        }

        function test_streamingUpdates() {
            messages.append({ messageId: 0, role: "user", content: "More", complete: true, streaming: false })
            messages.append({ messageId: 0, role: "assistant", content: "", complete: false, streaming: true })
            mock.generating = true
            compare(view.count, 4)
            messages.setProperty(3, "content", "Partial\n```py\nprint(1)")
            wait(50)
            const last = delegateAt(3)
            verify(last)
            // An unterminated fence still shows as code while it streams.
            compare(findAll(last, "codeText", []).length, 1)
            // Actions are hidden while streaming; Regenerate is disabled while generating.
            verify(!findAll(last, "copyMessageButton", [])[0].parent.visible)
            verify(!findAll(delegateAt(0), "editButton", [])[0].enabled)
            mock.generating = false
            messages.remove(2, 2)
        }
    }
}
