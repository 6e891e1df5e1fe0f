import QtQuick
import QtTest
import Ember

// The chat view over the real ChatController (its message model parses Markdown in C++, its
// store keeps the conversation) and a fake engine.
Item {
    id: root
    width: 700
    height: 500

    readonly property ChatController chat: fixture.chat()
    readonly property string answer: "Here is **bold** prose.\n\n```c\nint main() { return 0; }\n```\n\nAnd more prose."

    ChatView {
        id: view
        anchors.fill: parent
        controller: root.chat
    }

    TestCase {
        name: "ChatView"
        when: windowShown

        // Opens a stored conversation and waits until the view shows it.
        function open(messages) {
            fixture.conversation(root.chat, messages)
            view.forceLayout()  // the view takes model changes in at its next layout
            tryVerify(() => view.count === messages.length && delegateAt(messages.length - 1) !== null,
                      5000, "the conversation shown")
        }
        function init() {
            fixture.hold(false)
            open([["user", "Show me C"], ["assistant", root.answer]])
        }
        function cleanup() {
            root.chat.stop()
            tryVerify(() => !root.chat.generating, 30000, "the reply stopped")
            fixture.hold(false)
        }

        // Clicks where the item is once the view has laid its delegates out: a delegate that
        // grew or was replaced moves the others at the view's next polish, and a click at the old
        // place would land on another delegate.
        function click(item) {
            view.forceLayout()
            waitForItemPolished(view)
            mouseClick(item)
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
            click(findAll(answer, "copyMessageButton", [])[0])
            verify(fixture.clipboard().startsWith("Here is **bold**"), fixture.clipboard())
            click(findAll(answer, "regenerateButton", [])[0])
            // A second version of the answer, stored; the first one stays.
            tryVerify(() => !root.chat.generating && delegateAt(1) !== null
                            && delegateAt(1).versions === 2, 30000, "regenerated")
            compare(delegateAt(1).content, "New answer.")
            compare(fixture.stored(root.chat), ["Show me C", "New answer."])
        }

        // After a crash: an incomplete last answer offers Continue and Regenerate; an unanswered
        // last message offers Regenerate.
        function test_incompleteOrUnansweredLastMessage() {
            verify(!findAll(delegateAt(1), "continueButton", [])[0].visible, "a complete answer")
            open([["user", "Show me C"], ["assistant", "Here is", false]])
            const answer = delegateAt(1)
            verify(findAll(answer, "continueButton", [])[0].visible)
            verify(findAll(answer, "regenerateButton", [])[0].visible)
            click(findAll(answer, "continueButton", [])[0])
            // The same reply, grown.
            tryVerify(() => !root.chat.generating && delegateAt(1) !== null
                            && delegateAt(1).content === "Here isNew answer.", 30000, "continued")
            compare(fixture.stored(root.chat), ["Show me C", "Here isNew answer."])
            compare(delegateAt(1).versions, 1)
            open([["user", "Show me C"]])
            const user = delegateAt(0)
            tryVerify(() => findAll(user, "regenerateButton", [])[0].visible, 30000,
                      "an unanswered message")
            verify(!findAll(user, "continueButton", [])[0].visible)
            click(findAll(user, "regenerateButton", [])[0])
            tryVerify(() => view.count === 2 && !root.chat.generating, 30000, "answered")
            tryVerify(() => !findAll(delegateAt(0), "regenerateButton", [])[0].visible)
        }

        // `< 2/3 >` under a message with versions; the reply's details in small print; why a
        // stopped reply stopped.
        function test_versionsAndDetails() {
            verify(!findAll(delegateAt(1), "messageFooter", [])[0].visible, "one version, no details")
            for (let n = 2; n <= 3; ++n) {
                root.chat.regenerate()
                tryVerify(() => !root.chat.generating && delegateAt(1) !== null
                                && delegateAt(1).versions === n, 30000, "version " + n)
            }
            view.forceLayout()  // the view takes model changes in at its next layout
            tryVerify(() => delegateAt(1) !== null
                            && findAll(delegateAt(1), "messageFooter", [])[0].visible)
            let answer = delegateAt(1)
            compare(findAll(answer, "versionLabel", [])[0].text, "3/3")
            compare(findAll(answer, "detailsLabel", [])[0].text,
                    "fake.gguf · 2 tokens · 42.3 tok/s · 0.35 s to first token")
            compare(findAll(answer, "stoppedLabel", [])[0].text, "(stopped at the token limit)")
            verify(findAll(answer, "continueButton", [])[0].visible)
            // The arrows choose the version in the store; the view shows it.
            click(findAll(answer, "previousVersionButton", [])[0])
            tryVerify(() => delegateAt(1) !== null && delegateAt(1).version === 2, 30000)
            click(findAll(delegateAt(1), "previousVersionButton", [])[0])
            tryVerify(() => delegateAt(1) !== null && delegateAt(1).version === 1, 30000)
            compare(delegateAt(1).content, root.answer)
            compare(fixture.stored(root.chat), ["Show me C", root.answer])
            click(findAll(delegateAt(1), "nextVersionButton", [])[0])
            tryVerify(() => delegateAt(1) !== null && delegateAt(1).version === 2, 30000)
            compare(fixture.stored(root.chat), ["Show me C", "New answer."])
            // The user's message has one version: no arrows.
            verify(!findAll(delegateAt(0), "previousVersionButton", [])[0].visible)
        }

        function test_editAndResend() {
            const user = delegateAt(0)
            click(findAll(user, "editButton", [])[0])
            verify(user.editing)
            const area = findAll(user, "editArea", [])[0]
            compare(area.text, "Show me C")
            area.text = "Show me Rust"
            click(findAll(user, "saveAndSendButton", [])[0])
            verify(!user.editing)
            // A new version of the message, answered; the old one stays stored beside it.
            tryVerify(() => !root.chat.generating && view.count === 2 && delegateAt(0) !== null
                            && delegateAt(0).content === "Show me Rust", 30000)
            compare(delegateAt(0).version, 2)
            compare(delegateAt(0).versions, 2)
            compare(fixture.stored(root.chat), ["Show me Rust", "New answer."])
        }

        // A long reply: blocks scrolled out of view are not drawn (the block leaves the scene
        // graph, so a frame's cost does not grow with the reply), those in view are; every block
        // keeps its place, 8 px below the one before.
        function test_blocksOutOfViewAreNotDrawn() {
            let text = ""
            for (let i = 0; i < 80; ++i) text += "Paragraph " + i + " of a long reply.\n\n"
            fixture.append(root.chat.messages, 3, "assistant", text, true, false)
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
            tryVerify(placed, 30000, "each block 8 px below the one before")
            const height = delegateAt(2).height
            view.positionViewAtEnd()
            tryVerify(() => !prose[0].visible, 30000, "the first paragraph is far above the view")
            verify(!prose[0].parent.visible, "its block is out of the scene graph")
            verify(prose[79].visible, "the last one is in view")
            verify(placed(), "hidden blocks keep their places")
            compare(delegateAt(2).height, height)
            view.positionViewAtIndex(2, ListView.Beginning)
            tryVerify(() => prose[0].visible, 30000, "scrolled back: drawn again")
            verify(!prose[79].visible)
            verify(!prose[79].parent.visible)
            verify(placed())
            compare(delegateAt(2).height, height)
            // A narrower view wraps every block again: all are placed again, hidden ones too.
            root.width = 150
            tryVerify(() => delegateAt(2).height > height, 30000, "taller when narrower")
            tryVerify(placed, 30000, "placed again after the resize")
            root.width = 700
        }

        function test_streamingUpdates() {
            open([["user", "Show me C"], ["assistant", root.answer], ["user", "More"]])
            fixture.hold(true)  // the reply is generating until the test is done
            root.chat.regenerate()
            verify(root.chat.generating)
            compare(view.count, 4)
            fixture.appendText(root.chat.messages, "Partial\n```py\nprint(1)")
            view.forceLayout()  // the view takes model changes in at its next layout
            tryVerify(() => delegateAt(3) !== null
                            && findAll(delegateAt(3), "codeText", []).length === 1)
            const last = delegateAt(3)
            // An unterminated fence still shows as code while it streams.
            let code = findAll(last, "codeText", [])
            compare(code.length, 1)
            const block = code[0]
            fixture.appendText(root.chat.messages, "\nprint(2)\n```\nDone.")
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
        }
    }
}
