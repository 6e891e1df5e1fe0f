import QtQuick
import QtQuick.Controls.Material
import QtQuick.Controls
import QtQuick.Layouts
import Ember

// A fenced code block: language label, Copy button, monospace text with syntax highlighting.
// `highlighter` (a MessageBlocks) attaches the C++ highlighter to the text; without one the code
// is plain. A growing block (streaming) gets only its new text appended, so the highlighter
// colours only the lines that changed.
Rectangle {
    id: root
    property string code
    property string language
    property int fontSize: 14
    property MessageBlocks highlighter: null
    property string shown: ""  // what codeText holds
    Theme { id: theme; dark: root.Material.theme === Material.Dark }
    // Always dark, so its buttons (Copy) take the dark theme's light text in both themes.
    Material.theme: Material.Dark

    implicitHeight: column.implicitHeight
    radius: 6
    color: theme.codeBackground
    border.color: theme.codeBorder

    function sync() {
        if (shown.length > 0 && code.length > shown.length && code.startsWith(shown))
            codeText.insert(codeText.length, code.slice(shown.length))
        else
            codeText.text = code
        shown = code
    }
    function attachHighlighter() {
        if (highlighter)
            highlighter.highlight(codeText.textDocument, language, {
                keyword: theme.codeKeyword, type: theme.codeType, string: theme.codeString,
                comment: theme.codeComment, number: theme.codeNumber })
    }
    onCodeChanged: sync()
    onLanguageChanged: attachHighlighter()
    onHighlighterChanged: attachHighlighter()
    Component.onCompleted: { attachHighlighter(); sync() }

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
        // The code, exactly as written (plain text: Copy copies it unchanged), highlighted.
        TextEdit {
            id: codeText
            objectName: "codeText"
            Layout.fillWidth: true
            Layout.margins: 10
            Layout.topMargin: 2
            readOnly: true
            selectByMouse: true
            wrapMode: TextEdit.WrapAnywhere
            textFormat: TextEdit.PlainText
            font.family: "monospace"
            font.pixelSize: root.fontSize - 1
            color: theme.codeText
            selectionColor: theme.codeSelection
        }
    }
}
