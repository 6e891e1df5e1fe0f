pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Ember

// The downloads tab: every download in progress, paused (also those found unfinished at start)
// or failed, with its controls.
ListView {
    id: root
    property ModelLibrary library

    objectName: "downloadList"
    clip: true
    spacing: 4
    model: library.downloads
    ScrollBar.vertical: ScrollBar {}
    delegate: Pane {
        id: item
        required property DownloadTask task
        required property string key
        required property string name
        width: ListView.view.width
        padding: 12
        background: Rectangle {
            color: "transparent"
            Rectangle { anchors.bottom: parent.bottom; width: parent.width; height: 1; color: Material.dividerColor }
        }
        ColumnLayout {
            anchors.fill: parent
            spacing: 2
            Label {
                text: item.name
                font.bold: true
                Layout.fillWidth: true
                elide: Text.ElideRight
            }
            DownloadControls {
                Layout.fillWidth: true
                task: item.task
                onRemoveRequested: root.library.removeDownload(item.key)
            }
        }
    }
    Label {
        anchors.centerIn: parent
        visible: root.count === 0
        text: qsTr("No downloads.")
        color: Material.hintTextColor
    }
}
