import QtQuick
import QtTest
import Ember

// The per-conversation "think" switch: shown only where the model's template takes
// enable_thinking, and it sets the conversation's setting.
Item {
    id: root
    width: 600
    height: 120

    QtObject {
        id: mock
        property bool generating: false
        property bool thinkingSwitch: false
        property bool thinking: true
        function send(text) { return true }
        function stop() {}
    }
    InputBar {
        id: bar
        anchors.fill: parent
        controller: mock
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
            mock.thinkingSwitch = true
            verify(s.visible)
            verify(s.checked)
            mouseClick(s)
            compare(mock.thinking, false)
            mock.thinking = true  // another conversation selected
            verify(s.checked)
        }
    }
}
