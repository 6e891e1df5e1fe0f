import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Ember

// The model being loaded: the engine's progress (the share of the weights read, checked and
// uploaded or repacked; indeterminate until its first report) with a Cancel button.
// `inference` needs: loading, loadProgress, stop().
RowLayout {
    id: root
    property InferenceController inference

    visible: !!inference && inference.loading
    spacing: 8
    readonly property real progress: inference ? inference.loadProgress : 0

    ProgressBar {
        objectName: "loadProgressBar"
        indeterminate: root.progress <= 0
        value: root.progress
        Layout.fillWidth: true
    }
    Label {
        objectName: "loadProgressText"
        text: root.progress > 0
              ? qsTr("Loading the model… %1 %").arg(Math.floor(root.progress * 100))
              : qsTr("Loading the model…")
    }
    Button {
        objectName: "cancelLoadButton"
        text: qsTr("Cancel")
        flat: true
        onClicked: root.inference.stop()
    }
}
