import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

// The buttons under a message: Copy; Edit (own messages); Continue (an answer cut short: stopped,
// the token limit, a crash); Regenerate (the last answer, or the last message when it was never
// answered). All but Copy wait while a reply is generated (`busy`).
RowLayout {
    id: root
    property bool isUser: false
    property bool isLast: false
    property bool complete: true
    property bool busy: false
    property int fontSize: 14
    signal copy()
    signal edit()
    signal continueReply()
    signal regenerate()
    spacing: 0

    ToolButton {
        objectName: "copyMessageButton"
        text: qsTr("Copy")
        font.pixelSize: root.fontSize - 2
        onClicked: root.copy()
    }
    ToolButton {
        objectName: "editButton"
        visible: root.isUser
        enabled: !root.busy
        text: qsTr("Edit")
        font.pixelSize: root.fontSize - 2
        onClicked: root.edit()
    }
    ToolButton {
        objectName: "continueButton"
        visible: !root.isUser && root.isLast && !root.complete
        enabled: !root.busy
        text: qsTr("Continue")
        font.pixelSize: root.fontSize - 2
        onClicked: root.continueReply()
    }
    ToolButton {
        objectName: "regenerateButton"
        visible: root.isLast
        enabled: !root.busy
        text: qsTr("Regenerate")
        font.pixelSize: root.fontSize - 2
        onClicked: root.regenerate()
    }
}
