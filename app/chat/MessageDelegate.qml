pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Ember

// One message: its text with the reasoning, prose and code (MessageBubble), an editor for the
// user's own (EditBox), its versions and details (MessageFooter), and its actions (Copy, Edit,
// Continue, Regenerate: MessageActions).
Item {
    id: root
    required property int index
    required property string role
    required property string content
    required property bool streaming
    required property bool complete
    required property MessageBlocks blocks
    required property int reasoningMs
    required property int version
    required property int versions
    required property string model
    required property int tokens
    required property real tokensPerSecond
    required property real ttftMs
    required property string stopReason
    required property ChatController controller
    property bool isLast: false
    property int fontSize: 14
    property bool editing: false
    readonly property bool isUser: role === "user"
    readonly property bool busy: controller ? controller.generating : false

    implicitHeight: column.implicitHeight + 20
    width: ListView.view ? ListView.view.width : implicitWidth

    HoverHandler { id: hover }

    ColumnLayout {
        id: column
        x: 20
        y: 10
        width: root.width - 40
        spacing: 4

        Label {
            text: root.isUser ? qsTr("You") : qsTr("Assistant")
            font.bold: true
            font.pixelSize: root.fontSize - 1
            color: root.isUser ? Material.accent : Material.foreground
            Layout.alignment: root.isUser ? Qt.AlignRight : Qt.AlignLeft
        }

        MessageBubble {
            id: bubble
            objectName: "bubble"
            visible: !root.editing
            Layout.alignment: root.isUser ? Qt.AlignRight : Qt.AlignLeft
            Layout.preferredWidth: root.isUser ? Math.min(bubble.textWidth + 30, column.width * 0.8)
                                               : column.width
            isUser: root.isUser
            content: root.content
            streaming: root.streaming
            complete: root.complete
            stopReason: root.stopReason
            blocks: root.blocks
            reasoningMs: root.reasoningMs
            fontSize: root.fontSize
            view: root.ListView.view
            originY: root.y + column.y + bubble.y
        }

        EditBox {
            visible: root.editing
            Layout.fillWidth: true
            initialText: root.content
            onAccepted: (text) => { root.editing = false; root.controller.editAndResend(root.index, text) }
            onCanceled: root.editing = false
        }

        MessageFooter {
            objectName: "messageFooter"
            Layout.alignment: root.isUser ? Qt.AlignRight : Qt.AlignLeft
            visible: !root.editing && !root.streaming && (versions > 1 || details.length > 0)
            version: root.version
            versions: root.versions
            busy: root.busy
            model: root.isUser ? "" : root.model
            tokens: root.isUser ? 0 : root.tokens
            tokensPerSecond: root.isUser ? 0 : root.tokensPerSecond
            ttftMs: root.isUser ? 0 : root.ttftMs
            fontSize: root.fontSize
            onSwitchVersion: (step) => root.controller.switchVersion(root.index, step)
        }

        MessageActions {
            Layout.alignment: root.isUser ? Qt.AlignRight : Qt.AlignLeft
            opacity: hover.hovered || root.isLast ? 1 : 0
            visible: !root.editing && !root.streaming
            isUser: root.isUser
            isLast: root.isLast
            complete: root.complete
            busy: root.busy
            fontSize: root.fontSize
            onCopy: root.controller.copyText(root.content)
            onEdit: root.editing = true
            onContinueReply: root.controller.continueResponse()
            onRegenerate: root.controller.regenerate()
        }
    }
}
