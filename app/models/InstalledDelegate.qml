import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts

// One model file of the models folder: what its header says, its fit estimate, and the buttons
// to use or delete it. A file that is not a readable GGUF model says so in plain words, with the
// reader's error behind Details.
ItemDelegate {
    id: root
    Theme { id: theme; dark: root.Material.theme === Material.Dark }
    required property int index
    required property string name
    required property string path
    required property string fileName
    required property string sizeText
    required property bool ready
    required property string error
    required property string errorSummary
    required property string architecture
    required property string parameters
    required property string quantization
    required property string quantizationMix
    required property int contextLength
    required property string problem
    required property string fitVerdict
    required property string fitText
    required property string fitDetail
    property bool current: false   // the loaded model
    property bool showDetails: false
    signal useRequested(string path)
    signal deleteRequested(string path, string fileName)

    objectName: "installedEntry_" + index
    width: ListView.view ? ListView.view.width : implicitWidth
    hoverEnabled: false
    down: false
    padding: 12
    background: Rectangle {
        color: root.current ? theme.currentRow : "transparent"
        Rectangle { anchors.bottom: parent.bottom; width: parent.width; height: 1; color: Material.dividerColor }
    }

    contentItem: ColumnLayout {
        spacing: 4
        RowLayout {
            Layout.fillWidth: true
            spacing: 8
            Label {
                text: root.name
                font.bold: true
                font.pixelSize: 15
                elide: Text.ElideMiddle
                Layout.fillWidth: true
            }
            FitBadge { verdict: root.fitVerdict; text: root.fitText; detail: root.fitDetail }
            Button {
                objectName: "useButton"
                text: root.current ? qsTr("In use") : qsTr("Use")
                visible: root.error.length === 0
                enabled: !root.current && root.ready && root.problem.length === 0
                highlighted: true
                onClicked: root.useRequested(root.path)
            }
            Button {
                objectName: "deleteButton"
                text: qsTr("Delete")
                flat: true
                onClicked: root.deleteRequested(root.path, root.fileName)
            }
        }
        Label {
            objectName: "detailsLabel"
            Layout.fillWidth: true
            visible: root.error.length === 0
            text: !root.ready && root.architecture.length === 0 ? qsTr("Reading the header…")
                : [root.architecture, root.parameters ? root.parameters + qsTr(" parameters") : "",
                   root.contextLength > 0 ? qsTr("%1 context").arg(root.contextLength) : "",
                   root.sizeText].filter(s => s.length > 0).join("  ·  ")
            color: Material.hintTextColor
            font.pixelSize: 12
            elide: Text.ElideRight
        }
        Label {
            Layout.fillWidth: true
            visible: root.quantizationMix.length > 0 && root.error.length === 0
            text: qsTr("Quantization: %1").arg(root.quantizationMix)
            font.pixelSize: 12
            color: Material.hintTextColor
            elide: Text.ElideRight
        }
        RowLayout {
            Layout.fillWidth: true
            visible: root.error.length > 0 || root.problem.length > 0
            Label {
                objectName: "errorLabel"
                Layout.fillWidth: true
                text: root.error.length ? qsTr("Not a usable model: %1").arg(root.errorSummary)
                    : root.problem.length ? qsTr("Cannot run yet: %1").arg(root.problem) : ""
                color: root.error.length ? theme.failure : theme.warning
                wrapMode: Text.Wrap
            }
            ToolButton {
                objectName: "errorDetailsToggle"
                visible: root.error.length > 0
                text: root.showDetails ? qsTr("Hide details") : qsTr("Details")
                onClicked: root.showDetails = !root.showDetails
            }
        }
        // The reader's own message, as the error banner shows it.
        TextEdit {
            objectName: "errorDetails"
            Layout.fillWidth: true
            visible: root.showDetails && root.error.length > 0
            text: root.error
            readOnly: true
            selectByMouse: true
            wrapMode: TextEdit.Wrap
            color: Material.hintTextColor
            font.family: "monospace"
            font.pixelSize: 12
        }
    }
}
