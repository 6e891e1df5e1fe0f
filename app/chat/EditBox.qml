import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

// Editing a sent message: Save & send replaces it and everything after it.
ColumnLayout {
    id: root
    property string initialText
    signal accepted(string text)
    signal canceled()

    onVisibleChanged: if (visible) { area.text = initialText; area.forceActiveFocus() }
    spacing: 4
    TextArea {
        id: area
        objectName: "editArea"
        Layout.fillWidth: true
        wrapMode: TextArea.Wrap
    }
    RowLayout {
        Layout.alignment: Qt.AlignRight
        Button {
            text: qsTr("Cancel")
            flat: true
            onClicked: root.canceled()
        }
        Button {
            objectName: "saveAndSendButton"
            text: qsTr("Save and send")
            highlighted: true
            enabled: area.text.trim().length > 0
            onClicked: root.accepted(area.text)
        }
    }
}
