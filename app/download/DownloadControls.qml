import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Ember

// One download's progress bar, its status (size, speed, time left, or the error) and its
// pause / resume / cancel buttons. task: a DownloadTask.
ColumnLayout {
    id: root
    Theme { id: theme; dark: root.Material.theme === Material.Dark }
    property DownloadTask task  // null: none
    signal removeRequested()

    readonly property bool failed: !!task && task.state === "failed"
    spacing: 0

    component SmallButton: Button {
        flat: true
        topInset: 0
        bottomInset: 0
        implicitHeight: 30
        font.pixelSize: 12
    }

    ProgressBar {
        objectName: "downloadProgress"
        Layout.fillWidth: true
        Layout.topMargin: 6
        from: 0
        to: 1
        value: root.task && root.task.progress >= 0 ? root.task.progress : 0
        indeterminate: !!root.task && root.task.progress < 0 && !root.failed
        Material.accent: root.failed ? theme.failure : Material.DeepOrange
    }
    RowLayout {
        Layout.fillWidth: true
        spacing: 2
        Label {
            objectName: "downloadStatus"
            Layout.fillWidth: true
            Layout.alignment: Qt.AlignVCenter
            verticalAlignment: Text.AlignVCenter
            Layout.fillHeight: true
            text: root.task ? root.task.statusText : ""
            color: root.failed ? theme.failure : Material.hintTextColor
            font.pixelSize: 12
            wrapMode: Text.Wrap
            maximumLineCount: 3
            elide: Text.ElideRight
        }
        Label {
            objectName: "downloadPercent"
            visible: !!root.task && root.task.progress >= 0
            text: root.task ? Math.floor(root.task.progress * 100) + "%" : ""
            font.pixelSize: 12
            font.bold: true
            rightPadding: 6
        }
        SmallButton {
            objectName: "pauseButton"
            visible: !!root.task && root.task.canPause
            text: qsTr("Pause")
            onClicked: root.task.pause()
        }
        SmallButton {
            objectName: "resumeButton"
            visible: !!root.task && root.task.canResume
            text: root.failed ? qsTr("Retry") : qsTr("Resume")
            onClicked: root.task.resume()
        }
        SmallButton {
            objectName: "cancelButton"
            text: qsTr("Cancel")
            ToolTip.visible: hovered
            ToolTip.text: qsTr("Stop and delete the partial file")
            onClicked: root.removeRequested()
        }
    }
}
