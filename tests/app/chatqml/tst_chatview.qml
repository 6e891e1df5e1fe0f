import QtQuick
import QtTest
import Ember

// The chat view over the real message model (Markdown parsed in C++), with a mock controller.
Item {
    id: root
    width: 700
    height: 500

    QtObject {
        id: mock
        property bool generating: false
        property var messages: fixture.messages()
        property var copied: []
        property int regenerated: 0
        property var edits: []
        function copyText(t) { copied = copied.concat([t]) }
        function regenerate() { regenerated += 1 }
        property int continued: 0
        function continueResponse() { continued += 1 }
        function editAndResend(row, text) { edits = edits.concat([[row, text]]) }
        property var switches: []
        function switchVersion(row, step) { switches = switches.concat([[row, step]]) }
    }
    readonly property string answer: "Here is **bold** prose.\n\n```c\nint main() { return 0; }\n```\n\nAnd more prose."

    ChatView {
        id: view
        anchors.fill: parent
        controller: mock
    }

    TestCase {
        name: "ChatView"
        when: windowShown

        function init() {
            fixture.removeFrom(mock.messages, 0)
            fixture.append(mock.messages, 1, "user", "Show me C", true, false)
            fixture.append(mock.messages, 2, "assistant", root.answer, true, false)
            view.forceLayout()  // the view takes model changes in at its next layout
            tryVerify(() => view.count === 2 && delegateAt(1) !== null, 5000, "both messages shown")
        }

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
            const prose = findAll(answer, "proseText", [])
            compare(prose.length, 2, "prose before and after the code")
            compare(prose[0].getText(0, prose[0].length), "Here is bold prose.")
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
            fixture.finishLast(mock.messages, 2, root.answer, false)
            verify(findAll(answer, "continueButton", [])[0].visible)
            verify(findAll(answer, "regenerateButton", [])[0].visible)
            mouseClick(findAll(answer, "continueButton", [])[0])
            compare(mock.continued, 1)
            fixture.removeFrom(mock.messages, 1)
            view.forceLayout()  // the view takes model changes in at its next layout
            tryVerify(() => view.count === 1 && delegateAt(0) !== null)
            const user = delegateAt(0)
            tryVerify(() => findAll(user, "regenerateButton", [])[0].visible, 5000,
                      "an unanswered message")
            verify(!findAll(user, "continueButton", [])[0].visible)
            fixture.append(mock.messages, 2, "assistant", root.answer, true, false)
            view.forceLayout()  // the view takes model changes in at its next layout
            tryVerify(() => !findAll(delegateAt(0), "regenerateButton", [])[0].visible)
        }

        // `< 2/3 >` under a message with versions; the reply's details in small print; why a
        // stopped reply stopped.
        function test_versionsAndDetails() {
            verify(!findAll(delegateAt(1), "messageFooter", [])[0].visible, "one version, no details")
            fixture.removeFrom(mock.messages, 1)
            fixture.appendVersion(mock.messages, 5, "assistant", "Another answer", 2, 3)
            fixture.setLastDetails(mock.messages, "tiny.gguf", 120, 42.25, 350, "max_tokens")
            fixture.finishLast(mock.messages, 5, "Another answer", false)
            view.forceLayout()  // the view takes model changes in at its next layout
            tryVerify(() => delegateAt(1) !== null
                            && findAll(delegateAt(1), "messageFooter", [])[0].visible)
            const answer = delegateAt(1)
            compare(findAll(answer, "versionLabel", [])[0].text, "2/3")
            compare(findAll(answer, "detailsLabel", [])[0].text,
                    "tiny.gguf · 120 tokens · 42.3 tok/s · 0.35 s to first token")
            compare(findAll(answer, "stoppedLabel", [])[0].text, "(stopped at the token limit)")
            verify(findAll(answer, "continueButton", [])[0].visible)
            mouseClick(findAll(answer, "previousVersionButton", [])[0])
            mouseClick(findAll(answer, "nextVersionButton", [])[0])
            compare(mock.switches, [[1, -1], [1, 1]])
            // The user's message has one version: no arrows.
            verify(!findAll(delegateAt(0), "previousVersionButton", [])[0].visible)
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

        // A long reply: blocks scrolled out of view are not drawn (the block leaves the scene
        // graph, so a frame's cost does not grow with the reply), those in view are; every block
        // keeps its place, 8 px below the one before.
        function test_blocksOutOfViewAreNotDrawn() {
            let text = ""
            for (let i = 0; i < 80; ++i) text += "Paragraph " + i + " of a long reply.\n\n"
            fixture.append(mock.messages, 3, "assistant", text, true, false)
            view.forceLayout()  // the view takes model changes in at its next layout
            tryVerify(() => delegateAt(2) !== null
                            && findAll(delegateAt(2), "proseText", []).length === 80)
            const prose = findAll(delegateAt(2), "proseText", [])
            const placed = () => {
                for (let i = 1; i < prose.length; ++i) {
                    const above = prose[i - 1].parent, block = prose[i].parent
                    if (block.y !== above.y + above.height + 8) return false
                }
                return true
            }
            tryVerify(placed, 5000, "each block 8 px below the one before")
            const height = delegateAt(2).height
            view.positionViewAtEnd()
            tryVerify(() => !prose[0].visible, 5000, "the first paragraph is far above the view")
            verify(!prose[0].parent.visible, "its block is out of the scene graph")
            verify(prose[79].visible, "the last one is in view")
            verify(placed(), "hidden blocks keep their places")
            compare(delegateAt(2).height, height)
            view.positionViewAtIndex(2, ListView.Beginning)
            tryVerify(() => prose[0].visible, 5000, "scrolled back: drawn again")
            verify(!prose[79].visible)
            verify(!prose[79].parent.visible)
            verify(placed())
            compare(delegateAt(2).height, height)
            // A narrower view wraps every block again: all are placed again, hidden ones too.
            root.width = 150
            tryVerify(() => delegateAt(2).height > height, 5000, "taller when narrower")
            tryVerify(placed, 5000, "placed again after the resize")
            root.width = 700
        }

        function test_streamingUpdates() {
            fixture.append(mock.messages, 3, "user", "More", true, false)
            fixture.append(mock.messages, 0, "assistant", "", false, true)
            mock.generating = true
            compare(view.count, 4)
            fixture.appendText(mock.messages, "Partial\n```py\nprint(1)")
            view.forceLayout()  // the view takes model changes in at its next layout
            tryVerify(() => delegateAt(3) !== null
                            && findAll(delegateAt(3), "codeText", []).length === 1)
            const last = delegateAt(3)
            // An unterminated fence still shows as code while it streams.
            let code = findAll(last, "codeText", [])
            compare(code.length, 1)
            const block = code[0]
            fixture.appendText(mock.messages, "\nprint(2)\n```\nDone.")
            view.forceLayout()  // the view takes model changes in at its next layout
            tryVerify(() => findAll(last, "proseText", []).length === 2)
            code = findAll(last, "codeText", [])
            compare(code.length, 1)
            compare(code[0], block, "the growing code block is the same item, only appended to")
            compare(code[0].text, "print(1)\nprint(2)")
            compare(findAll(last, "proseText", []).length, 2)
            // Actions are hidden while streaming; Regenerate is disabled while generating.
            verify(!findAll(last, "copyMessageButton", [])[0].parent.visible)
            verify(!findAll(delegateAt(0), "editButton", [])[0].enabled)
            mock.generating = false
        }
    }
}
