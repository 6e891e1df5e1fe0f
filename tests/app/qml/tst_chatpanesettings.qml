import QtQuick
import QtQuick.Controls
import QtTest
import Ember

// The conversation's settings in the chat pane's header line: what the conversation sets (and
// what it takes from the app) in a line, changed as the conversation's settings change, and the
// button that opens its settings dialog.
Item {
    id: root
    width: 800
    height: 600

    readonly property Settings settings: fixture.settings()
    readonly property InferenceController inference: fixture.inference()
    readonly property ChatController chat: fixture.chat(inference, settings)

    ChatPane {
        id: pane
        anchors.fill: parent
        chat: root.chat
        inference: root.inference
        settings: root.settings
    }

    TestCase {
        name: "ChatPaneSettings"
        when: windowShown

        // Items and the objects beside them (a dialog is a Popup: in its parent's data).
        function child(item, name) {
            if (item.objectName === name) return item
            const kids = item.data || item.children || []
            for (let i = 0; i < kids.length; ++i) {
                const found = child(kids[i], name)
                if (found) return found
            }
            return null
        }

        function test_headerLineFollowsTheConversationsSettings() {
            const label = child(pane, "conversationSettingsLabel")
            verify(label && label.visible)
            compare(label.text, "drops the oldest turns when full", "a new conversation: defaults")
            root.chat.setConversationSetting("temperature", 0.25)
            root.chat.setConversationSetting("contextPolicy", "rollingWindow")
            compare(label.text, root.chat.settingsSummary)
            verify(label.text.indexOf("temperature 0.25") >= 0, label.text)
            verify(label.text.indexOf("rolling window") >= 0, label.text)
            root.chat.newConversation()  // new chats take the defaults again
            compare(label.text, "drops the oldest turns when full")
            mouseClick(child(pane, "conversationSettingsButton"))
            const dialog = child(pane, "conversationSettingsDialog")
            verify(dialog)
            tryVerify(() => dialog.opened, 5000, "the conversation's settings dialog")
            dialog.close()
        }
    }
}
