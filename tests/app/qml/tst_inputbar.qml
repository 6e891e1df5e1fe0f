import QtQuick
import QtTest
import Ember

// The input box on the real ChatController (a fake engine whose reply runs until stopped): Enter
// sends, Shift+Enter adds a line, Stop replaces Send while generating, the text stays when the
// message is not stored.
Item {
    id: root
    width: 600
    height: 200

    readonly property Settings settings: fixture.settings()
    readonly property InferenceController inference: fixture.inference()
    readonly property ChatController chat: fixture.chat(root.inference, root.settings)
    // A chat with no model loaded: it stores nothing.
    readonly property ChatController unloaded: fixture.chat(fixture.inference(), root.settings)

    InputBar {
        id: bar
        anchors.fill: parent
        controller: root.chat
    }

    TestCase {
        name: "InputBar"
        when: windowShown

        function findChildNamed(item, name) {
            if (item.objectName === name) return item
            for (let i = 0; i < item.children.length; ++i) {
                const found = findChildNamed(item.children[i], name)
                if (found) return found
            }
            return null
        }
        function init() {
            if (!root.inference.modelLoaded) {
                fixture.loadModel(root.inference, "fake.gguf")
                fixture.loadStep(1)
                tryVerify(() => root.inference.modelLoaded, 30000, "the fake model loaded")
            }
            root.chat.newConversation()
            bar.controller = root.chat
            bar.ready = true
            bar.text = ""
            findChildNamed(bar, "messageInput").forceActiveFocus()
        }
        function cleanup() {
            root.chat.stop()
            tryVerify(() => !root.chat.generating, 30000, "the reply stopped")
            root.chat.dismissError()
        }
        // The messages the chat stored in its open conversation (0: none).
        function sent() { return root.chat.currentConversationId === 0 ? "" : root.chat.currentTitle }

        function test_enterSends() {
            keyClick("H"); keyClick("i")
            keyClick(Qt.Key_Return)
            compare(sent(), "Hi")
            compare(bar.text, "", "the box is cleared after sending")
        }

        // A message taken back (it did not fit the context) returns to an empty box only.
        function test_unsentMessageComesBack() {
            keyClick("H"); keyClick("i")
            keyClick(Qt.Key_Return)
            compare(bar.text, "")
            root.chat.messageNotSent("Hi")
            compare(bar.text, "Hi")
            bar.text = "New text"
            root.chat.messageNotSent("Hi")
            compare(bar.text, "New text")
        }

        function test_textStaysWhenNotAccepted() {
            bar.controller = root.unloaded
            keyClick("H"); keyClick("i")
            keyClick(Qt.Key_Return)
            compare(root.unloaded.currentConversationId, 0, "nothing stored")
            verify(root.unloaded.errorMessage.length > 0)
            compare(bar.text, "Hi", "the typed message is kept")
            mouseClick(findChildNamed(bar, "sendButton"))
            compare(root.unloaded.currentConversationId, 0)
            compare(bar.text, "Hi")
            root.unloaded.dismissError()
        }

        function test_keypadEnterSends() {
            keyClick("x")
            keyClick(Qt.Key_Enter)
            compare(sent(), "x")
        }

        function test_shiftEnterAddsLine() {
            keyClick("a")
            keyClick(Qt.Key_Return, Qt.ShiftModifier)
            keyClick("b")
            compare(sent(), "")
            compare(bar.text, "a\nb")
            keyClick(Qt.Key_Return)
            compare(sent(), "a b")  // the title: the message on one line
        }

        function test_emptyIsNotSent() {
            keyClick(Qt.Key_Space)
            keyClick(Qt.Key_Return)
            compare(sent(), "")
        }

        function test_stopVisibleOnlyWhileGenerating() {
            const send = findChildNamed(bar, "sendButton")
            const stop = findChildNamed(bar, "stopButton")
            verify(send.visible)
            verify(!stop.visible)
            keyClick("g"); keyClick("o")
            keyClick(Qt.Key_Return)
            tryVerify(() => root.chat.generating, 30000)
            verify(!send.visible)
            verify(stop.visible)
            const rows = root.chat.messages.count
            // Enter does not send while a response is generating; the text stays.
            keyClick("q")
            keyClick(Qt.Key_Return)
            compare(root.chat.messages.count, rows)
            compare(bar.text, "q")
            mouseClick(stop)
            tryVerify(() => !root.chat.generating, 30000, "stopped")
            verify(send.visible)
            verify(!stop.visible)
            mouseClick(send)
            tryVerify(() => root.chat.messages.count === rows + 2, 30000, "q sent and answered")
            compare(bar.text, "")
        }

        // The token counter: what is typed goes to the controller to be counted, and the count
        // shows against the context.
        function test_tokenCounter() {
            const counter = findChildNamed(bar, "tokenCounter")
            keyClick("a"); keyClick("b")
            tryVerify(() => counter.visible && root.chat.contextTokens > 0, 30000, "counted")
            compare(counter.text, root.chat.contextTokens + " / " + root.chat.contextLength)
            verify(!counter.font.bold)
            bar.text = "word ".repeat(root.chat.contextLength)
            tryVerify(() => root.chat.contextTokens > root.chat.contextLength, 30000, "over")
            verify(counter.font.bold, "over the context")
        }

        function test_notReadyDoesNotSend() {
            bar.ready = false
            keyClick("z")
            keyClick(Qt.Key_Return)
            compare(sent(), "")
            verify(!findChildNamed(bar, "sendButton").enabled)
        }
    }
}
