import QtQuick
import QtQuick.Controls.Material
import QtQuick.Controls
import QtQuick.Layouts
import "highlight.js" as Highlight

// A fenced code block: language label, Copy button, monospace text with syntax highlighting.
Rectangle {
    id: root
    property string code
    property string language
    property int fontSize: 14
    Theme { id: theme; dark: root.Material.theme === Material.Dark }
    // Always dark, so its buttons (Copy) take the dark theme's light text in both themes.
    Material.theme: Material.Dark

    implicitHeight: column.implicitHeight
    radius: 6
    color: theme.codeBackground
    border.color: theme.codeBorder

    ColumnLayout {
        id: column
        anchors.left: parent.left
        anchors.right: parent.right
        spacing: 0
        RowLayout {
            Layout.fillWidth: true
            Layout.leftMargin: 10
            Layout.rightMargin: 4
            Label {
                text: root.language.length ? root.language : qsTr("code")
                color: theme.codeLabel
                font.pixelSize: root.fontSize - 2
                Layout.fillWidth: true
            }
            ToolButton {
                id: copyButton
                objectName: "copyCodeButton"
                text: qsTr("Copy")
                font.pixelSize: root.fontSize - 2
                onClicked: {
                    codeText.selectAll()
                    codeText.copy()
                    codeText.deselect()
                    text = qsTr("Copied")
                    resetLabel.restart()
                }
                Timer { id: resetLabel; interval: 1500; onTriggered: copyButton.text = qsTr("Copy") }
            }
        }
        // The code as shown: highlighted, selectable.
        TextEdit {
            objectName: "codeHighlighted"
            Layout.fillWidth: true
            Layout.margins: 10
            Layout.topMargin: 2
            text: Highlight.toHtml(root.code, root.language, {
                keyword: theme.codeKeyword, string: theme.codeString,
                comment: theme.codeComment, number: theme.codeNumber })
            readOnly: true
            selectByMouse: true
            wrapMode: TextEdit.WrapAnywhere
            textFormat: TextEdit.RichText
            font.family: "monospace"
            font.pixelSize: root.fontSize - 1
            color: theme.codeText
            selectionColor: theme.codeSelection
        }
        // The code as copied: the plain text, exactly.
        TextEdit {
            id: codeText
            objectName: "codeText"
            visible: false
            text: root.code
            textFormat: TextEdit.PlainText
            font.family: "monospace"
        }
    }
}
