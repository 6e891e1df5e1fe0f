import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import "markdown.js" as Markdown

// One message: Markdown prose and code blocks, with Copy, Edit (own messages) and Regenerate
// (the last answer). `controller` needs: generating, copyText, regenerate, editAndResend.
Item {
    id: root
    required property int index
    required property string role
    required property string content
    required property bool streaming
    required property bool complete
    property var controller
    property bool isLast: false
    property int fontSize: 14
    property bool editing: false
    readonly property bool isUser: role === "user"
    readonly property bool busy: controller ? controller.generating : false
    Theme { id: theme; dark: root.Material.theme === Material.Dark }

    implicitHeight: column.implicitHeight + 20
    width: ListView.view ? ListView.view.width : implicitWidth

    HoverHandler { id: hover }
    // The unwrapped width of the text, to fit a short message's bubble to it.
    Text {
        id: measure
        visible: false
        text: root.content
        font.pixelSize: root.fontSize
    }

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

        Rectangle {
            id: bubble
            objectName: "bubble"
            visible: !root.editing
            Layout.alignment: root.isUser ? Qt.AlignRight : Qt.AlignLeft
            Layout.preferredWidth: root.isUser ? Math.min(measure.implicitWidth + 30, column.width * 0.8)
                                               : column.width
            implicitHeight: segments.implicitHeight + 20
            radius: 10
            color: root.isUser ? theme.alpha(Material.accent, 0.14) : theme.assistantBubble

            Column {
                id: segments
                x: 14
                y: 10
                width: bubble.width - 28
                spacing: 8
                Repeater {
                    model: Markdown.split(root.content)
                    delegate: Loader {
                        required property var modelData
                        width: segments.width
                        sourceComponent: modelData.type === "code" ? codeComponent : proseComponent
                        property string segmentText: modelData.text
                        property string segmentLanguage: modelData.language
                    }
                }
                Label {
                    visible: root.streaming && root.content.length === 0
                    text: qsTr("Thinking…")
                    color: Material.hintTextColor
                }
                Label {
                    visible: !root.complete && !root.streaming && !root.isUser
                    text: qsTr("(incomplete)")
                    color: Material.hintTextColor
                    font.italic: true
                }
            }
        }

        EditBox {
            visible: root.editing
            Layout.fillWidth: true
            initialText: root.content
            onAccepted: (text) => { root.editing = false; root.controller.editAndResend(root.index, text) }
            onCanceled: root.editing = false
        }

        RowLayout {
            Layout.alignment: root.isUser ? Qt.AlignRight : Qt.AlignLeft
            opacity: hover.hovered || root.isLast ? 1 : 0
            visible: !root.editing && !root.streaming
            spacing: 0
            ToolButton {
                objectName: "copyMessageButton"
                text: qsTr("Copy")
                font.pixelSize: root.fontSize - 2
                onClicked: root.controller.copyText(root.content)
            }
            ToolButton {
                objectName: "editButton"
                visible: root.isUser
                enabled: !root.busy
                text: qsTr("Edit")
                font.pixelSize: root.fontSize - 2
                onClicked: root.editing = true
            }
            ToolButton {
                objectName: "continueButton"
                // An answer cut short (a crash, a failure): generate more of it.
                visible: !root.isUser && root.isLast && !root.complete
                enabled: !root.busy
                text: qsTr("Continue")
                font.pixelSize: root.fontSize - 2
                onClicked: root.controller.continueResponse()
            }
            ToolButton {
                objectName: "regenerateButton"
                // The last answer, or the last message when it was never answered.
                visible: root.isLast
                enabled: !root.busy
                text: qsTr("Regenerate")
                font.pixelSize: root.fontSize - 2
                onClicked: root.controller.regenerate()
            }
        }
    }

    Component {
        id: proseComponent
        TextEdit {
            objectName: "proseText"
            // Line breaks kept; tables with cell padding; links in the theme's colour (readable
            // in the dark theme).
            text: parent ? Markdown.colourLinks(Markdown.paddedTables(Markdown.hardBreaks(parent.segmentText),
                                                                      6, theme.link), theme.link) : ""
            textFormat: TextEdit.MarkdownText
            readOnly: true
            selectByMouse: true
            wrapMode: TextEdit.Wrap
            color: Material.foreground
            selectionColor: Material.accent
            font.pixelSize: root.fontSize
            onLinkActivated: (link) => Qt.openUrlExternally(link)
        }
    }
    Component {
        id: codeComponent
        CodeBlock {
            code: parent ? parent.segmentText : ""
            language: parent ? parent.segmentLanguage : ""
            fontSize: root.fontSize
        }
    }
}
