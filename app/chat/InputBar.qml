import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Ember

// The message box: Enter sends, Shift+Enter starts a new line; Stop replaces Send while a
// response is generating; a Think switch where the model can reason or not; the token counter.
Pane {
    id: root
    required property ChatController controller
    property bool ready: true           // a model is loaded
    property alias text: input.text
    readonly property bool generating: controller ? controller.generating : false

    function submit() {
        if (generating || !ready || input.text.trim().length === 0)
            return
        // Cleared only once the message is stored: on a failure (a full disk) the text stays.
        if (controller.send(input.text) === true)
            input.clear()
    }

    // A message the model never saw (it did not fit the context) comes back to the box, unless
    // something new was typed meanwhile.
    Connections {
        target: root.controller
        ignoreUnknownSignals: true
        function onMessageNotSent(text) {
            if (input.text.trim().length === 0)
                input.text = text
        }
    }

    padding: 12
    RowLayout {
        anchors.fill: parent
        spacing: 8

        ScrollView {
            Layout.fillWidth: true
            Layout.preferredHeight: Math.min(Math.max(input.implicitHeight, 44), 160)
            TextArea {
                id: input
                objectName: "messageInput"
                placeholderText: root.ready ? qsTr("Message Ember… (Enter to send, Shift+Enter for a new line)")
                                            : qsTr("Load a model to start chatting")
                wrapMode: TextArea.Wrap
                focus: true
                onTextChanged: if (root.controller) root.controller.setDraft(text)
                Keys.onPressed: (event) => {
                    if (event.key !== Qt.Key_Return && event.key !== Qt.Key_Enter)
                        return
                    event.accepted = true
                    if (event.modifiers & Qt.ShiftModifier)
                        input.insert(input.cursorPosition, "\n")
                    else
                        root.submit()
                }
            }
        }
        Label {
            // The conversation with this message, in the model's tokens, against the context.
            objectName: "tokenCounter"
            readonly property int used: root.controller ? root.controller.contextTokens : -1
            readonly property int total: root.controller ? root.controller.contextLength : 0
            visible: used >= 0 && total > 0
            text: qsTr("%1 / %2").arg(used).arg(total)
            font.bold: used > total
            opacity: used > total ? 1 : 0.6
            ToolTip.visible: hoverArea.hovered
            ToolTip.text: qsTr("Tokens of the conversation and this message, of the context's %1").arg(total)
            HoverHandler { id: hoverArea }
        }
        Switch {
            // Reasoning models: think before answering, for this conversation (templates that
            // take enable_thinking).
            objectName: "thinkSwitch"
            text: qsTr("Think")
            visible: root.controller ? root.controller.thinkingSwitch : false
            checked: root.controller ? root.controller.thinking : false
            focusPolicy: Qt.NoFocus
            ToolTip.visible: hovered
            ToolTip.text: qsTr("Let the model reason before it answers, in this conversation")
            onToggled: root.controller.thinking = checked
        }
        Button {
            id: sendButton
            objectName: "sendButton"
            text: qsTr("Send")
            highlighted: true
            focusPolicy: Qt.NoFocus  // keep typing in the box after a click
            visible: !root.generating
            enabled: root.ready && input.text.trim().length > 0
            onClicked: root.submit()
        }
        Button {
            id: stopButton
            objectName: "stopButton"
            text: qsTr("Stop")
            focusPolicy: Qt.NoFocus
            visible: root.generating
            onClicked: root.controller.stop()
        }
    }
}
