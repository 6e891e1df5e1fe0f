import QtQuick
import QtTest
import Ember

// The input box against a mock controller: Enter sends, Shift+Enter adds a line,
// Stop replaces Send while generating, the text stays when the message is not accepted.
Item {
    id: root
    width: 600
    height: 200

    QtObject {
        id: mock
        property bool generating: false
        property var sent: []
        property int stops: 0
        property bool accepts: true  // false: as when the message cannot be stored
        function send(text) { sent = sent.concat([text]); return accepts }
        function stop() { stops += 1 }
        signal messageNotSent(string text)
        property string draft: ""
        property int contextTokens: -1
        property int contextLength: 256
        function setDraft(text) { draft = text }
    }

    InputBar {
        id: bar
        anchors.fill: parent
        controller: mock
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
            mock.generating = false
            mock.sent = []
            mock.stops = 0
            mock.accepts = true
            bar.ready = true
            bar.text = ""
            findChildNamed(bar, "messageInput").forceActiveFocus()
        }

        function test_enterSends() {
            keyClick("H"); keyClick("i")
            keyClick(Qt.Key_Return)
            compare(mock.sent, ["Hi"])
            compare(bar.text, "", "the box is cleared after sending")
        }

        // A message taken back (it did not fit the context) returns to an empty box only.
        function test_unsentMessageComesBack() {
            keyClick("H"); keyClick("i")
            keyClick(Qt.Key_Return)
            compare(bar.text, "")
            mock.messageNotSent("Hi")
            compare(bar.text, "Hi")
            bar.text = "New text"
            mock.messageNotSent("Hi")
            compare(bar.text, "New text")
        }

        function test_textStaysWhenNotAccepted() {
            mock.accepts = false
            keyClick("H"); keyClick("i")
            keyClick(Qt.Key_Return)
            compare(mock.sent, ["Hi"])
            compare(bar.text, "Hi", "the typed message is kept")
            mouseClick(findChildNamed(bar, "sendButton"))
            compare(mock.sent, ["Hi", "Hi"])
            compare(bar.text, "Hi")
        }

        function test_keypadEnterSends() {
            keyClick("x")
            keyClick(Qt.Key_Enter)
            compare(mock.sent, ["x"])
        }

        function test_shiftEnterAddsLine() {
            keyClick("a")
            keyClick(Qt.Key_Return, Qt.ShiftModifier)
            keyClick("b")
            compare(mock.sent, [])
            compare(bar.text, "a\nb")
            keyClick(Qt.Key_Return)
            compare(mock.sent, ["a\nb"])
        }

        function test_emptyIsNotSent() {
            keyClick(Qt.Key_Space)
            keyClick(Qt.Key_Return)
            compare(mock.sent, [])
        }

        function test_stopVisibleOnlyWhileGenerating() {
            const send = findChildNamed(bar, "sendButton")
            const stop = findChildNamed(bar, "stopButton")
            verify(send.visible)
            verify(!stop.visible)
            mock.generating = true
            verify(!send.visible)
            verify(stop.visible)
            mouseClick(stop)
            compare(mock.stops, 1)
            // Enter does not send while a response is generating; the text stays.
            keyClick("q")
            keyClick(Qt.Key_Return)
            compare(mock.sent, [])
            compare(bar.text, "q")
            mock.generating = false
            verify(send.visible)
            verify(!stop.visible)
            mouseClick(send)
            compare(mock.sent, ["q"])
        }

        // The token counter: what is typed goes to the controller to be counted, and the count
        // shows against the context; nothing shows until there is a count.
        function test_tokenCounter() {
            const counter = findChildNamed(bar, "tokenCounter")
            mock.contextTokens = -1
            verify(!counter.visible)
            keyClick("a"); keyClick("b")
            compare(mock.draft, "ab")
            mock.contextTokens = 120
            verify(counter.visible)
            compare(counter.text, "120 / 256")
            verify(!counter.font.bold)
            mock.contextTokens = 300
            verify(counter.font.bold, "over the context")
        }

        function test_notReadyDoesNotSend() {
            bar.ready = false
            keyClick("z")
            keyClick(Qt.Key_Return)
            compare(mock.sent, [])
            verify(!findChildNamed(bar, "sendButton").enabled)
        }
    }
}
