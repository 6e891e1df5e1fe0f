import QtQuick
import QtQuick.Controls
import QtTest
import Ember

// The conversation's settings dialog against a mock controller: fields start at the value in
// effect (the conversation's own, else the app's); a change becomes the conversation's own.
Item {
    id: root
    width: 700
    height: 600

    QtObject {
        id: mockChat
        property var conversationSettings: ({})
        property var calls: []
        function setConversationSetting(key, value) {
            calls = calls.concat([[key, value]])
            const s = Object.assign({}, conversationSettings)
            if (value === undefined) delete s[key]; else s[key] = value
            conversationSettings = s
        }
    }
    QtObject {
        id: mockSettings
        property string systemPrompt: "You are helpful."
        property real temperature: 0.8
        property int maxTokens: 512
    }

    ConversationSettingsDialog {
        id: dialog
        chat: mockChat
        settings: mockSettings
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
            dialog.open()
            tryVerify(() => dialog.opened)
            const prompt = findChildNamed(dialog.contentItem, "systemPromptField")
            compare(prompt.text, "You are helpful.", "the app's default")
            const policy = findChildNamed(dialog.contentItem, "contextPolicyField")
            compare(policy.currentIndex, 0)
            policy.activated(2)
            compare(mockChat.calls, [["contextPolicy", "stop"]])
            compare(policy.currentIndex, 2)
            mockChat.setConversationSetting("systemPrompt", "Be a pirate.")
            compare(prompt.text, "Be a pirate.", "the conversation's own")
            const temperature = findChildNamed(dialog.contentItem, "temperatureField")
            temperature.numberEdited(0.3)
            compare(mockChat.conversationSettings.temperature, 0.3)
            mouseClick(findChildNamed(dialog.contentItem, "resetConversationSettings"))
            compare(Object.keys(mockChat.conversationSettings).length, 0)
            compare(prompt.text, "You are helpful.")
            compare(policy.currentIndex, 0)
            dialog.close()
        }
    }
}
