import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Ember

// This conversation's own settings: system prompt, sampling and what happens when the context
// is full. Each field starts at the value in effect (the conversation's, else the app's); only a
// field changed here becomes the conversation's own. `settings`: the app's defaults.
Dialog {
    id: root
    required property ChatController chat
    required property Settings settings
    readonly property var own: chat ? chat.conversationSettings : ({})  // a QVariantMap: text, numbers
    readonly property list<string> policies: ["dropOldest", "rollingWindow", "stop"]

    function valueOf(key, fallback) { return own[key] !== undefined ? own[key] : fallback }
    function set(key, value) { root.chat.setConversationSetting(key, value) }

    objectName: "conversationSettingsDialog"
    title: qsTr("This conversation")
    modal: true
    standardButtons: Dialog.Close
    width: Math.min(parent ? parent.width - 80 : 520, 520)

    GridLayout {
        anchors.fill: parent
        columns: 2
        columnSpacing: 16

        Label { text: qsTr("System prompt") }
        TextArea {
            objectName: "systemPromptField"
            Layout.fillWidth: true
            Layout.preferredHeight: 80
            wrapMode: TextArea.Wrap
            text: root.valueOf("systemPrompt", root.settings ? root.settings.systemPrompt : "")
            onEditingFinished: if (text !== root.valueOf("systemPrompt", root.settings.systemPrompt)) root.set("systemPrompt", text)
        }
        Label { text: qsTr("Temperature") }
        NumberField {
            objectName: "temperatureField"
            maximum: 2
            number: root.valueOf("temperature", root.settings ? root.settings.temperature : 0.8)
            onNumberEdited: (n) => root.set("temperature", n)
        }
        Label { text: qsTr("Max tokens per reply") }
        SpinBox {
            objectName: "maxTokensField"
            from: 1; to: 131072; editable: true
            value: root.valueOf("maxTokens", root.settings ? root.settings.maxTokens : 512)
            onValueModified: root.set("maxTokens", value)
        }
        Label { text: qsTr("When the context is full") }
        ComboBox {
            objectName: "contextPolicyField"
            Layout.fillWidth: true
            model: [qsTr("Leave out the oldest turns (keep the system prompt)"),
                    qsTr("Rolling window (only the newest turns)"),
                    qsTr("Stop")]
            currentIndex: Math.max(0, root.policies.indexOf(root.valueOf("contextPolicy", "dropOldest")))
            onActivated: (i) => root.set("contextPolicy", root.policies[i])
        }
        Button {
            objectName: "resetConversationSettings"
            Layout.columnSpan: 2
            text: qsTr("Use the app's settings")
            onClicked: {
                for (const key of ["systemPrompt", "temperature", "maxTokens", "contextPolicy"])
                    root.set(key, undefined)
            }
        }
    }
}
