import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts

// An error or notice strip above the chat; hidden while its text is empty.
Rectangle {
    id: root
    property string text
    property bool error: true
    signal dismissed()

    visible: text.length > 0
    Material.foreground: error ? "#8a1c12" : "#17406d"
    implicitHeight: visible ? row.implicitHeight + 12 : 0
    color: error ? "#fdecea" : "#e8f1fd"
    border.color: error ? "#f5c2bd" : "#bcd3f5"
    radius: 6

    RowLayout {
        id: row
        anchors.fill: parent
        anchors.leftMargin: 12
        anchors.rightMargin: 4
        Label {
            objectName: "bannerText"
            text: root.text
            color: root.error ? "#8a1c12" : "#17406d"
            wrapMode: Text.Wrap
            Layout.fillWidth: true
        }
        ToolButton {
            text: "✕"
            onClicked: root.dismissed()
        }
    }
}
