import QtQuick
import QtTest
import Ember

// The per-conversation "think" switch: shown only where the model's template takes
// enable_thinking, and it sets the conversation's setting.
Item {
    id: root
    width: 600
    height: 120

    readonly property ChatController chat: fixture.chat()
    InputBar {
        id: bar
        anchors.fill: parent
        controller: root.chat
    }

    TestCase {
        name: "ThinkSwitch"
        when: windowShown

        function child(item, name) {
            if (item.objectName === name) return item
            for (let i = 0; i < item.children.length; ++i) {
                const found = child(item.children[i], name)
                if (found) return found
            }
            return null
        }

        function test_switch() {
            const s = child(bar, "thinkSwitch")
            verify(s)
            verify(!s.visible, "hidden for templates without enable_thinking")
            verify(fixture.load(root.chat, "think.gguf"))  // its template takes enable_thinking
            tryVerify(() => s.visible)
            verify(s.checked)
            mouseClick(s)
            compare(root.chat.thinking, false)
            root.chat.newConversation()  // a new conversation thinks
            verify(s.checked)
        }
    }
}
