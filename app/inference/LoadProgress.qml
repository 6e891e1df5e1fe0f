import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

// The model being loaded: an indeterminate bar (the engine reports no steady progress, so no
// percentage is shown) with a Cancel button. `inference` needs: loading, stop().
RowLayout {
    id: root
    property var inference

    visible: !!inference && inference.loading
    spacing: 8
    ProgressBar {
        objectName: "loadProgressBar"
        indeterminate: true
        Layout.fillWidth: true
    }
    Label {
        objectName: "loadProgressText"
        text: qsTr("Loading the model…")
    }
    Button {
        objectName: "cancelLoadButton"
        text: qsTr("Cancel")
        flat: true
        onClicked: root.inference.stop()
    }
}
