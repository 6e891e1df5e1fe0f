import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Ember

// One catalog entry: name, facts, fit estimate, and the download button or the download's
// progress; entries the engine cannot run say why instead.
ItemDelegate {
    id: root
    Theme { id: theme; dark: root.Material.theme === Material.Dark }
    required property string modelId
    required property string name
    required property string description
    required property string sizeText
    required property string parameters
    required property string quantization
    required property string license
    required property int contextLength
    required property bool supported
    required property string reason
    required property bool installed
    required property string fitVerdict
    required property string fitText
    required property string fitDetail
    required property DownloadTask download  // null: not downloading
    property ModelLibrary library

    objectName: "catalogEntry_" + modelId
    width: ListView.view ? ListView.view.width : implicitWidth
    hoverEnabled: false
    down: false
    padding: 12

    background: Rectangle {
        color: "transparent"
        Rectangle {
            anchors.bottom: parent.bottom
            width: parent.width
            height: 1
            color: Material.dividerColor
        }
    }

    contentItem: ColumnLayout {
        spacing: 2
        RowLayout {
            Layout.fillWidth: true
            spacing: 12
            ColumnLayout {
                Layout.fillWidth: true
                spacing: 2
                Label {
                    Layout.fillWidth: true
                    text: root.name
                    font.bold: true
                    font.pixelSize: 15
                    elide: Text.ElideRight
                    opacity: root.supported ? 1 : 0.6
                }
                Label {
                    Layout.fillWidth: true
                    text: [root.parameters ? root.parameters + qsTr(" parameters") : "", root.quantization, root.sizeText,
                           root.contextLength > 0 ? qsTr("%1K context").arg(Math.round(root.contextLength / 1024)) : "",
                           root.license].filter(s => s.length > 0).join("  ·  ")
                    color: Material.hintTextColor
                    font.pixelSize: 12
                    elide: Text.ElideRight
                }
                Label {
                    Layout.fillWidth: true
                    visible: text.length > 0
                    text: root.description
                    wrapMode: Text.Wrap
                    maximumLineCount: 2
                    elide: Text.ElideRight
                    opacity: root.supported ? 0.9 : 0.6
                }
                Label {
                    objectName: "unsupportedLabel"
                    Layout.fillWidth: true
                    visible: !root.supported
                    text: qsTr("Not supported yet: %1").arg(root.reason)
                    color: theme.warning
                    font.italic: true
                    wrapMode: Text.Wrap
                }
            }
            ColumnLayout {
                Layout.alignment: Qt.AlignRight | Qt.AlignVCenter
                spacing: 4
                FitBadge {
                    objectName: "fitBadge"
                    Layout.alignment: Qt.AlignRight
                    verdict: root.fitVerdict
                    text: root.fitText
                    detail: root.fitDetail
                }
                Button {
                    objectName: "downloadButton"
                    Layout.alignment: Qt.AlignRight
                    visible: root.supported && !root.installed && !root.download
                    text: qsTr("Download")
                    highlighted: true
                    onClicked: root.library.download(root.modelId)
                }
                Label {
                    objectName: "installedLabel"
                    Layout.alignment: Qt.AlignRight
                    visible: root.installed
                    text: qsTr("✓ Installed")
                    color: Material.accent
                    font.bold: true
                }
            }
        }
        DownloadControls {
            objectName: "downloadControls"
            Layout.fillWidth: true
            visible: !!root.download
            task: root.download
            onRemoveRequested: root.library.removeDownload(root.modelId)
        }
    }
}
