import QtQuick
import QtQuick.Controls
import QtTest
import Ember

// The conversation's settings dialog on the real ChatController and Settings: fields start at
// the value in effect (the conversation's own, else the app's); a change becomes the
// conversation's own.
Item {
    id: root
    width: 700
    height: 600

    readonly property Settings settings: fixture.settings()
    readonly property ChatController chat: fixture.chat(fixture.inference(), root.settings)

    ConversationSettingsDialog {
        id: dialog
        chat: root.chat
        settings: root.settings
    }

    TestCase {
        name: "ConversationSettingsDialog"
        when: windowShown

        function findChildNamed(item, name) {
            if (item.objectName === name) return item
            const kids = item.children || []
            for (let i = 0; i < kids.length; ++i) {
                const found = findChildNamed(kids[i], name)
                if (found) return found
            }
            return null
        }

        function test_fieldsAndChanges() {
            root.settings.systemPrompt = "You are helpful."
            dialog.open()
            tryVerify(() => dialog.opened)
            const prompt = findChildNamed(dialog.contentItem, "systemPromptField")
            compare(prompt.text, "You are helpful.", "the app's default")
            const policy = findChildNamed(dialog.contentItem, "contextPolicyField")
            compare(policy.currentIndex, 0)
            policy.activated(2)
            compare(root.chat.conversationSettings.contextPolicy, "stop")
            compare(policy.currentIndex, 2)
            root.chat.setConversationSetting("systemPrompt", "Be a pirate.")
            compare(prompt.text, "Be a pirate.", "the conversation's own")
            const temperature = findChildNamed(dialog.contentItem, "temperatureField")
            temperature.numberEdited(0.3)
            compare(root.chat.conversationSettings.temperature, 0.3)
            verify(root.chat.settingsSummary.indexOf("temperature 0.3") >= 0, root.chat.settingsSummary)
            mouseClick(findChildNamed(dialog.contentItem, "resetConversationSettings"))
            compare(Object.keys(root.chat.conversationSettings).length, 0)
            compare(prompt.text, "You are helpful.")
            compare(policy.currentIndex, 0)
            dialog.close()
        }
    }
}
