import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts

// An error or notice strip above the chat; hidden while its text is empty. Both can be
// dismissed; a notice (error: false) also goes away by itself `timeout` ms after it last
// changed, an error stays until dismissed. Colours follow the light or dark theme.
Rectangle {
    id: root
    property string text
    property bool error: true
    // The technical message behind `text`, shown by its Details toggle (none when empty).
    property string details
    property bool showDetails: false
    property int timeout: 10000
    signal dismissed()

    Theme { id: theme; dark: root.Material.theme === Material.Dark }

    visible: text.length > 0
    Material.foreground: error ? theme.errorText : theme.infoText
    implicitHeight: visible ? column.implicitHeight + 12 : 0
    color: error ? theme.errorBackground : theme.infoBackground
    border.color: error ? theme.errorBorder : theme.infoBorder
    radius: 6

    onTextChanged: {
        showDetails = false
        if (!error && text.length > 0) expiry.restart(); else expiry.stop()
    }
    Timer {
        id: expiry
        objectName: "bannerExpiry"
        interval: root.timeout
        onTriggered: if (!root.error && root.text.length > 0) root.dismissed()
    }
    // Reading it (the pointer over it) keeps a notice up.
    HoverHandler { onHoveredChanged: if (hovered) expiry.stop(); else if (!root.error && root.text.length) expiry.restart() }

    ColumnLayout {
        id: column
        anchors.fill: parent
        anchors.leftMargin: 12
        anchors.rightMargin: 4
        spacing: 0
        RowLayout {
            Layout.fillWidth: true
            Label {
                objectName: "bannerText"
                text: root.text
                color: root.error ? theme.errorText : theme.infoText
                wrapMode: Text.Wrap
                Layout.fillWidth: true
            }
            ToolButton {
                objectName: "bannerDetailsToggle"
                visible: root.details.length > 0
                text: root.showDetails ? qsTr("Hide details") : qsTr("Details")
                onClicked: root.showDetails = !root.showDetails
            }
            ToolButton {
                objectName: "bannerClose"
                text: "✕"
                Accessible.name: qsTr("Dismiss")
                onClicked: root.dismissed()
            }
        }
        TextEdit {
            objectName: "bannerDetails"
            visible: root.showDetails && root.details.length > 0
            text: root.details
            readOnly: true
            selectByMouse: true
            wrapMode: TextEdit.Wrap
            color: root.error ? theme.errorText : theme.infoText
            font.family: "monospace"
            font.pixelSize: 12
            Layout.fillWidth: true
            Layout.bottomMargin: 6
        }
    }
}
